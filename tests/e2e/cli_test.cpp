// The `lizard` user commands against a real server and workers on
// 127.0.0.1: runs from a directory or a checksum with uploaded or shared
// datasets, fields written as .npy, detached runs followed and cancelled,
// and the errors a user meets (bad arguments, an unknown checksum, a refused
// or failed run, a missing token, the server gone mid-run, Ctrl-C).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "cli_process.h"
#include "dataset/npy.h"
#include "shared_cluster.h"

namespace lizard {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::string kSeedKmeans = LIZARD_TEST_DATA_DIR "/lizard-kmeans-n2048-d16.txt";

// The values of an .npy file as JSON nested by its shape.
json npy_values(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  const std::string bytes = s.str();
  auto n = npy_header_length(bytes);
  if (!n.ok()) return json();
  auto h = parse_npy_header(std::string_view(bytes).substr(0, *n));
  if (!h.ok()) return json();
  json flat = json::array();
  const char* data = bytes.data() + *n;
  for (int64_t i = 0; i < h->elements(); ++i) {
    if (h->dtype == DType::kFloat32)
      flat.push_back(reinterpret_cast<const float*>(data)[i]);
    else if (h->dtype == DType::kInt32)
      flat.push_back(reinterpret_cast<const int32_t*>(data)[i]);
    else if (h->dtype == DType::kInt64)
      flat.push_back(reinterpret_cast<const int64_t*>(data)[i]);
  }
  if (h->shape.size() != 2) return flat;
  json nested = json::array();
  for (int64_t r = 0; r < h->shape[0]; ++r) {
    json row = json::array();
    for (int64_t c = 0; c < h->shape[1]; ++c) row.push_back(flat[r * h->shape[1] + c]);
    nested.push_back(row);
  }
  return nested;
}

// Every number in nested arrays, as float32 (records print float32 values
// in their shortest form, which reads back to the same float).
std::vector<float> floats(const json& v) {
  std::vector<float> out;
  if (v.is_number()) out.push_back(v.get<float>());
  if (v.is_array())
    for (const json& e : v) {
      auto inner = floats(e);
      out.insert(out.end(), inner.begin(), inner.end());
    }
  return out;
}

// Blobs around (±5, ±5) in 2 dimensions, as an .npy file of float32.
std::string write_blobs(const std::string& dir, int rows) {
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(0.f, 0.5f);
  std::vector<float> pts;
  for (int i = 0; i < rows; ++i) {
    pts.push_back((i % 2 ? 5.f : -5.f) + noise(rng));
    pts.push_back((i % 4 < 2 ? 5.f : -5.f) + noise(rng));
  }
  const std::string path = dir + "/blobs.npy";
  std::ofstream(path, std::ios::binary) << npy_bytes(DType::kFloat32, {rows, 2}, pts.data());
  return path;
}

class CommandLine : public SharedClusterTest {};

TEST_F(CommandLine, RunsADirectoryWithAnUploadedTextFileAndWritesFields) {
  const std::string out = cluster_->dir() + "/out1";
  CliResult r = run_cli(
      *cluster_, {"run", "examples/kmeans", "--param", "k=4", "--param", "dims=16", "--dataset",
                  "points=lizard:" + kSeedKmeans, "--state", "centroids=1,2", "--out", out});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // 2 values for 4x16: refused with the server's reason
  EXPECT_NE(r.err.find("lizard: the run was refused: state field 'centroids'"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(out));

  std::string init = "[";
  for (int i = 0; i < 4 * 16; ++i) init += (i ? "," : "") + std::to_string(i % 7 * 0.1);
  init += "]";
  r = run_cli(*cluster_, {"run", "examples/kmeans", "--param", "k=4", "--param", "dims=16",
                          "--dataset", "points=lizard:" + kSeedKmeans, "--state",
                          "centroids=" + init, "--out", out, "--upload"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("program K-Means ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("uploading " + kSeedKmeans + " for dataset field 'points'"),
            std::string::npos)
      << r.err;
  const std::string id = r.out.substr(0, r.out.find(' '));
  EXPECT_NE(r.out.find(id + " done: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("counts = ["), std::string::npos) << r.out;

  // The fields on disk are the server's record of the run.
  json rec = get_json(*cluster_, "/runtimes/" + id);
  ASSERT_EQ(rec["status"], "done") << rec.dump(2);
  json centroids = npy_values(out + "/centroids.npy");
  ASSERT_EQ(centroids.size(), 4u);
  EXPECT_EQ(centroids[0].size(), 16u);
  EXPECT_EQ(floats(centroids), floats(rec["result"]["state"]["centroids"]));
  EXPECT_EQ(npy_values(out + "/counts.npy"), rec["result"]["aggregate"]["counts"]);
  json labels = npy_values(out + "/labels.npy");
  EXPECT_EQ(labels.size(), 2048u);
  for (const char* f : {"centroids", "counts", "labels", "shift", "sums"})
    EXPECT_TRUE(fs::exists(out + "/" + f + ".npy")) << f;
  // The upload made for the run is gone again.
  EXPECT_EQ(get_json(*cluster_, "/datasets")["uploads"], json::array());

  // The same run by path (--shared-path) gives the same result.
  CliResult by_path =
      run_cli(*cluster_, {"run", rec["program"], "--param", "k=4", "--param", "dims=16",
                          "--dataset", "points=lizard:" + kSeedKmeans, "--state",
                          "centroids=" + init, "--shared-path", "--json", "-q"});
  ASSERT_EQ(by_path.exit_code, 0) << by_path.err;
  EXPECT_EQ(by_path.err, "");
  json other = json::parse(by_path.out, nullptr, false);
  ASSERT_TRUE(other.is_object()) << by_path.out;
  // The same counts; centroids equal up to the order in which floats were summed.
  EXPECT_EQ(other["result"]["aggregate"]["counts"], rec["result"]["aggregate"]["counts"]);
  const auto a = floats(other["result"]["state"]["centroids"]);
  const auto b = floats(rec["result"]["state"]["centroids"]);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5) << "element " << i;
  EXPECT_EQ(other["params"], rec["params"]);
}

// A CSV whose first line names its columns: the line is skipped, whether
// the CLI reads and uploads the file or the workers read it by path.
TEST_F(CommandLine, ACsvHeaderLineIsSkipped) {
  const std::string csv = cluster_->dir() + "/with-header.csv";
  std::ofstream(csv) << "x,y,z\n1,2,3\n4,5,6\n10,20,30\n";
  for (const char* where : {"", "--shared-path"}) {
    std::vector<std::string> args = {"run",       "examples/sum",  "--param", "dims=3",
                                     "--dataset", "values=" + csv, "--json",  "-q"};
    if (*where) args.push_back(where);
    CliResult r = run_cli(*cluster_, args);
    ASSERT_EQ(r.exit_code, 0) << where << ": " << r.err;
    json rec = json::parse(r.out, nullptr, false);
    ASSERT_TRUE(rec.is_object()) << r.out;
    EXPECT_EQ(rec["result"]["aggregate"]["sums"], json::parse("[15.0, 27.0, 39.0]")) << where;
    EXPECT_EQ(rec["result"]["aggregate"]["count"], 3) << where;
  }
  // A header followed by a line that is not numbers either is named as such.
  const std::string bad = cluster_->dir() + "/two-headers.csv";
  std::ofstream(bad) << "x,y,z\nmetres,metres,metres\n1,2,3\n";
  CliResult r = run_cli(*cluster_,
                        {"run", "examples/sum", "--param", "dims=3", "--dataset", "values=" + bad});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(bad + ": line 2: value 1: expected a number (float64) (line 1 was read as "
                             "a header)"),
            std::string::npos)
      << r.err;
}

TEST_F(CommandLine, ChecksumPrefixNpyUploadAndProgressLines) {
  const std::string hash = register_program(LIZARD_SOURCE_DIR "/examples/kmeans");
  const std::string blobs = write_blobs(cluster_->dir(), 4000);
  CliResult r = run_cli(
      *cluster_, {"run", hash.substr(0, 10), "--param", "k=4", "--param", "dims=2", "--dataset",
                  blobs, "--state", "centroids=-4,-4,4,-4,-4,4,4,4", "--executors", "1:2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Piped, progress comes as plain lines on stderr; the result on stdout.
  EXPECT_NE(r.err.find(": done, iterations "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("counts = [1000,1000,1000,1000]"), std::string::npos) << r.out;
}

TEST_F(CommandLine, BadArgumentsExit2BeforeAnythingIsSent) {
  const json runs_before = get_json(*cluster_, "/runtimes");
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"run", "examples/sum", "--param", "dims"}, "--param 'dims': expected NAME=VALUE"},
      {{"run", "examples/sum", "--executors", "0"}, "--executors '0': expected N, MIN:MAX"},
      {{"run", "examples/sum", "--state", "x=[1"}, "--state x: '[1' is neither a file nor"},
      {{"run"}, "program is required"},
      {{"run", "examples/sum", "--bogus"}, "--bogus"},
      {{"status"}, "id is required"},
      {{"runs", "--status", "finished"}, "finished"},
  };
  for (const Case& c : cases) {
    CliResult r = run_cli(*cluster_, c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
  EXPECT_EQ(get_json(*cluster_, "/runtimes"), runs_before);
}

TEST_F(CommandLine, UnknownProgramsAndRefusedRunsExit1WithTheReason) {
  CliResult r = run_cli(*cluster_, {"run", std::string(64, 'a')});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("lizard: no program with checksum " + std::string(64, 'a') +
                       " is registered (`lizard run DIR` registers the program in DIR)"),
            std::string::npos)
      << r.err;
  r = run_cli(*cluster_, {"run", "no/such/dir"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("'no/such/dir' is neither a program directory nor a checksum"),
            std::string::npos)
      << r.err;
  r = run_cli(*cluster_, {"run", "examples/sum", "--dataset", kSeedKmeans});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("missing param(s): dims"), std::string::npos) << r.err;
  r = run_cli(*cluster_, {"run", "examples/kmeans", "--dataset", "centres=x.npy"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--dataset centres: the program's input fields are points"),
            std::string::npos)
      << r.err;
  r = run_cli(*cluster_, {"run", "examples/sum", "--param", "dims=4", "--dataset",
                          LIZARD_TEST_DATA_DIR "/lizard-demo-n16-d3.csv"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("lizard-demo-n16-d3.csv: line 1: expected 4 values, found 3"),
            std::string::npos)
      << r.err;
  // A run no connected worker can serve fails at once, and says why.
  const auto t0 = std::chrono::steady_clock::now();
  r = run_cli(*cluster_, {"run", "examples/sum", "--param", "dims=3", "--dataset",
                          LIZARD_TEST_DATA_DIR "/lizard-demo-n16-d3.csv", "--executors", "9"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(" failed: the run needs 9 executor(s)"), std::string::npos) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  EXPECT_EQ(get_json(*cluster_, "/datasets")["uploads"], json::array());
}

TEST_F(CommandLine, DetachedRunIsFollowedListedAndCancelled) {
  const std::string hash = register_program(LIZARD_SOURCE_DIR "/examples/kmeans");
  CliResult r = run_cli(*cluster_, {"run", hash, "--param", "k=4", "--param", "dims=2", "--param",
                                    "max_iterations=100000", "--param", "threshold=-1", "--dataset",
                                    write_blobs(cluster_->dir(), 200000), "--state",
                                    "centroids=0,0,1,1,2,2,3,3", "--executors", "1", "--detach"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string id = r.out.substr(0, r.out.find('\n'));
  ASSERT_EQ(id[0], 'r') << r.out;
  EXPECT_EQ(r.out, id + "\n");
  for (int i = 0; i < 500 && get_json(*cluster_, "/runtimes/" + id)["status"] != "running"; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));

  r = run_cli(*cluster_, {"status", id});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind(id + ": running\n", 0), 0u) << r.out;
  r = run_cli(*cluster_, {"runs", "--status", "running"});
  EXPECT_NE(r.out.find(id + "  running  anonymous  K-Means"), std::string::npos) << r.out;
  r = run_cli(*cluster_, {"workers"});
  EXPECT_NE(r.out.find("running " + id), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("K-Means (" + hash.substr(0, 12) + ") ready"), std::string::npos) << r.out;

  CliProcess follower(*cluster_, {"status", id, "--wait", "-q"});  // quiet: no progress
  r = run_cli(*cluster_, {"cancel", id});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, id + " cancelling\n");
  CliResult followed = follower.wait(60);
  EXPECT_EQ(followed.exit_code, 1);
  EXPECT_NE(followed.err.find("lizard: " + id + " cancelled: "), std::string::npos) << followed.err;
  EXPECT_EQ(followed.err.find("iterations "), std::string::npos) << followed.err;
  r = run_cli(*cluster_, {"cancel", id});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("run " + id + " is cancelled already"), std::string::npos) << r.err;
  r = run_cli(*cluster_, {"status", id, "--out", cluster_->dir() + "/none"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(id + " is cancelled: only a done run has fields"), std::string::npos)
      << r.err;
}

TEST_F(CommandLine, CtrlCCancelsTheRunItFollows) {
  const std::string hash = register_program(LIZARD_SOURCE_DIR "/examples/kmeans");
  CliProcess p(*cluster_, {"run", hash, "--param", "k=4", "--param", "dims=2", "--param",
                           "max_iterations=100000", "--param", "threshold=-1", "--dataset",
                           write_blobs(cluster_->dir(), 100000), "--state",
                           "centroids=0,0,1,1,2,2,3,3", "--executors", "1"});
  json running;
  for (int i = 0; i < 1000; ++i) {
    running = get_json(*cluster_, "/runtimes?status=running");
    if (running.size() == 1 && running[0].value("iterations", 0) > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(running.size(), 1u) << running.dump(2);
  const std::string id = running[0]["runtime_id"];
  p.signal(SIGINT);
  CliResult r = p.wait(60);
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_NE(r.err.find("lizard: cancelling " + id), std::string::npos) << r.err;
  EXPECT_EQ(get_json(*cluster_, "/runtimes/" + id)["status"], "cancelled");
}

TEST(CommandLineAlone, ServerGoneMidRunEndsTheCommandWithTheReason) {
  LocalCluster c;
  ASSERT_TRUE(c.start(1).ok());
  const std::string hash = register_program(c, LIZARD_SOURCE_DIR "/examples/kmeans");
  CliProcess p(c, {"run", hash, "--param", "k=4", "--param", "dims=2", "--param",
                   "max_iterations=100000", "--param", "threshold=-1", "--dataset",
                   write_blobs(c.dir(), 100000), "--state", "centroids=0,0,1,1,2,2,3,3"});
  json running;
  for (int i = 0; i < 1000 && running.size() != 1; ++i) {
    running = get_json(c, "/runtimes?status=running");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(running.size(), 1u);
  kill(c.server_pid(), SIGKILL);
  const auto t0 = std::chrono::steady_clock::now();
  CliResult r = p.wait(60);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("lizard: lost track of " + running[0]["runtime_id"].get<std::string>() +
                       ": cannot reach 127.0.0.1:" + std::to_string(c.port())),
            std::string::npos)
      << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
}

TEST(CommandLineAlone, TokensComeFromTheFlagOrTheEnvironment) {
  LocalCluster c;
  c.set_token("s3cret");
  ASSERT_TRUE(c.start(1, {"--token", "s3cret"}, {"--token", "s3cret"}).ok());
  CliResult r = run_cli(c, {"run", "examples/sum", "--param", "dims=3", "--dataset",
                            LIZARD_TEST_DATA_DIR "/lizard-demo-n16-d3.csv"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("missing token: send Authorization: Bearer <token> (give --token or set "
                       "LIZARD_TOKEN)"),
            std::string::npos)
      << r.err;
  r = run_cli(c, {"workers", "--token", "wrong"});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // reads need no token here, but a wrong one is refused
  EXPECT_NE(r.err.find("wrong token"), std::string::npos) << r.err;
  r = run_cli(c, {"cancel", "r1", "--token", "wrong"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("wrong token"), std::string::npos) << r.err;
  r = run_cli(c, {"run", "examples/sum", "--param", "dims=3", "--dataset",
                  LIZARD_TEST_DATA_DIR "/lizard-demo-n16-d3.csv", "--token", "s3cret"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run_cli(c,
              {"run", "examples/sum", "--param", "dims=3", "--dataset",
               LIZARD_TEST_DATA_DIR "/lizard-demo-n16-d3.csv"},
              {{"LIZARD_TOKEN", "s3cret"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("count = 16"), std::string::npos) << r.out;
}

// --gpus none makes a CPU worker that says why; with --backend cuda it is a
// clear error, as is a malformed value.
TEST(CommandLineAlone, GpusNoneIsAnExplicitCpuWorker) {
  LocalCluster c;
  ASSERT_TRUE(c.start(1, {"--backend", "auto", "--gpus", "none"}).ok());
  CliResult r = run_cli(c, {"workers"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("cpu backend"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("note: --gpus none: using the CPU backend"), std::string::npos) << r.out;
  r = run_cli(c, {"run", "examples/sum", "--param", "dims=3", "--dataset",
                  LIZARD_TEST_DATA_DIR "/lizard-demo-n16-d3.csv"});
  EXPECT_EQ(r.exit_code, 0) << r.err;

  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--backend", "cuda", "--gpus", "none"},
            "--gpus none leaves the CUDA backend no GPU; use --backend cpu"},
           {{"--gpus", "two"}, "--gpus 'two': expected all, none, indices such as 0 or 0,2"},
           {{"--backend", "cpu", "--gpus", "count=0"}, "the count must be a positive integer"}}) {
    std::vector<std::string> argv = {"client", "-a", "127.0.0.1", "-p", std::to_string(c.port())};
    argv.insert(argv.end(), args.begin(), args.end());
    CliResult refused = run_cli(c, argv, {}, 30);
    EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
    EXPECT_NE((refused.out + refused.err).find(message), std::string::npos)
        << refused.out << refused.err;
  }
}

// `lizard server --state-dir st` and `lizard client --cache-dir cache`, as a
// user types them in a directory of their own: the program's host.cpp builds
// on the server and its kernel on the worker, beneath directories named
// relative to where the daemons started.
TEST(CommandLineDirectories, DaemonsStartedWithRelativeDirectoriesBuildAndRun) {
  LocalCluster c;
  const std::string here = fs::relative(c.dir(), fs::current_path()).string();
  ASSERT_NE(here.front(), '/');
  ASSERT_TRUE(
      c.start(1, {"--cache-dir", here + "/worker-cache"}, {"--state-dir", here + "/st"}).ok());
  CliResult r =
      run_cli(c, {"run", "examples/kmeans", "--param", "k=2", "--param", "dims=2", "--dataset",
                  write_blobs(c.dir(), 400), "--state", "centroids=0,0,1,1"});
  ASSERT_EQ(r.exit_code, 0) << r.err << read_file(c.dir() + "/server.log");
  EXPECT_NE(r.out.find(" done: "), std::string::npos) << r.out;
  EXPECT_TRUE(fs::is_directory(c.dir() + "/st/hooks"));
  EXPECT_TRUE(fs::is_directory(c.dir() + "/worker-cache"));
}

}  // namespace
}  // namespace lizard
