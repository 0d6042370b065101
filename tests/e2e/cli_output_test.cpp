// What `lizard run` prints while it follows a run, on a pseudo-terminal (one
// line redrawn in place) and into a pipe (plain lines): the iterations the
// record counts, rows only where the run reports them, the singular for one
// iteration, and a run that no worker can take says so at once.
#include <gtest/gtest.h>

#include <signal.h>

#include <fstream>
#include <random>
#include <regex>

#include "cli_process.h"
#include "dataset/npy.h"
#include "local_cluster.h"

namespace lizard {
namespace {

// Blobs around (±5, ±5) in 2 dimensions, as an .npy file of float32.
std::string write_points(const std::string& dir, int rows) {
  std::mt19937 rng(3);
  std::normal_distribution<float> noise(0.f, 0.5f);
  std::vector<float> pts;
  for (int i = 0; i < rows; ++i) {
    pts.push_back((i % 2 ? 5.f : -5.f) + noise(rng));
    pts.push_back((i % 4 < 2 ? 5.f : -5.f) + noise(rng));
  }
  const std::string path = dir + "/points.npy";
  std::ofstream(path, std::ios::binary) << npy_bytes(DType::kFloat32, {rows, 2}, pts.data());
  return path;
}

// k-means that never converges (threshold -1): exactly `iterations` of them.
std::vector<std::string> kmeans_args(const std::string& points, int iterations) {
  return {"run",       "examples/kmeans",
          "--param",   "k=4",
          "--param",   "dims=2",
          "--param",   "threshold=-1",
          "--param",   "max_iterations=" + std::to_string(iterations),
          "--dataset", "points=" + points,
          "--state",   "centroids=-4,-4,4,-4,-4,4,4,4"};
}

// The iteration counts the progress showed ("iterations 7/40"), in order.
std::vector<int> iterations_shown(const std::string& text) {
  std::vector<int> out;
  const std::regex re("iterations ([0-9]+)/");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it)
    out.push_back(std::stoi((*it)[1].str()));
  return out;
}

class CliOutput : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new LocalCluster();
    Status st = cluster_->start(1);
    ASSERT_TRUE(st.ok()) << st.message();
    points_ = write_points(cluster_->dir(), 20000);
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  static LocalCluster* cluster_;
  static std::string points_;
};
LocalCluster* CliOutput::cluster_ = nullptr;
std::string CliOutput::points_;

TEST_F(CliOutput, AnIterativeRunOnATerminalCountsTheRecordsIterationsAndNoRows) {
  CliResult r = run_cli_in_terminal(*cluster_, kmeans_args(points_, 40), 120);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find('\r'), std::string::npos) << "no line redrawn in place:\n" << r.out;
  const size_t done = r.out.find(" done: 40 iterations in ");
  ASSERT_NE(done, std::string::npos) << r.out;
  // The bar never runs ahead of the record, and its last count is the record's.
  const std::vector<int> shown = iterations_shown(r.out.substr(0, done));
  ASSERT_FALSE(shown.empty()) << r.out;
  EXPECT_TRUE(std::is_sorted(shown.begin(), shown.end())) << r.out;
  EXPECT_EQ(shown.back(), 40) << r.out;
  // Iterative runs report whole iterations: no rows stuck at 0.
  EXPECT_EQ(r.out.find("rows "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("iteration(s)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("cached"), std::string::npos) << r.out;
}

// A run with values no build has used says what its compile took, so that a
// slow first run explains itself; the same run again compiles nothing and
// says nothing of it.
TEST_F(CliOutput, AFirstRunOfNewValuesSaysWhatItsCompileTook) {
  std::vector<std::string> args = kmeans_args(points_, 3);
  args[3] = "k=3";
  args.back() = "centroids=-4,-4,4,-4,-4,4";
  CliResult first = run_cli(*cluster_, args, {}, 120);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find(" of it compiling its kernels for new values"), std::string::npos)
      << first.out;
  CliResult again = run_cli(*cluster_, args, {}, 120);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find(" done: 3 iterations in "), std::string::npos) << again.out;
  EXPECT_EQ(again.out.find("compiling"), std::string::npos) << again.out;
}

TEST_F(CliOutput, AnIterativeRunIntoAPipeGetsPlainLinesWithTheSameCounts) {
  CliResult r = run_cli(*cluster_, kmeans_args(points_, 40), {}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(": done, iterations 40/40, "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("rows "), std::string::npos) << r.err;
  const std::vector<int> shown = iterations_shown(r.err);
  EXPECT_TRUE(std::is_sorted(shown.begin(), shown.end())) << r.err;
  EXPECT_NE(r.out.find(" done: 40 iterations in "), std::string::npos) << r.out;
}

// --max-iterations is the cap that stops the run, over the program's own
// max_iterations param (50 here): the bar counts to it, the record runs it
// out, and the last line says the run stopped at its cap; a run that
// converges first says its update hook stopped it.
TEST_F(CliOutput, TheIterationCapGivenIsTheOneThatStopsTheRunAndTheLastLineSaysWhy) {
  std::vector<std::string> args = kmeans_args(points_, 50);
  args.insert(args.end(), {"--max-iterations", "150", "--json"});
  CliResult capped = run_cli(*cluster_, args, {}, 180);
  ASSERT_EQ(capped.exit_code, 0) << capped.err;
  EXPECT_NE(capped.err.find(": done, iterations 150/150, "), std::string::npos) << capped.err;
  const nlohmann::json rec = nlohmann::json::parse(capped.out, nullptr, false);
  ASSERT_TRUE(rec.is_object()) << capped.out;
  EXPECT_EQ(rec.value("iterations", 0), 150) << capped.out;
  EXPECT_EQ(rec["params"].value("max_iterations", 0), 150) << capped.out;
  args.pop_back();  // the plain last line
  CliResult plain = run_cli(*cluster_, args, {}, 180);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.out.find(" done: 150 iterations in "), std::string::npos) << plain.out;
  EXPECT_NE(plain.out.find(", at its cap of 150 iterations\n"), std::string::npos) << plain.out;
  std::vector<std::string> converging = kmeans_args(points_, 50);
  converging[7] = "threshold=0.01";
  CliResult early = run_cli(*cluster_, converging, {}, 180);
  ASSERT_EQ(early.exit_code, 0) << early.err;
  EXPECT_NE(early.out.find(", stopped by its update hook\n"), std::string::npos) << early.out;
}

TEST_F(CliOutput, AOnePassRunShowsItsRowsAndOneIterationInTheSingular) {
  std::vector<std::string> args = kmeans_args(points_, 40);
  args.insert(args.end(), {"--max-iterations", "1"});
  CliResult piped = run_cli(*cluster_, args, {}, 120);
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_NE(piped.err.find(": done, iterations 1/1, rows 20000/20000, "), std::string::npos)
      << piped.err;
  EXPECT_NE(piped.out.find(" done: 1 iteration in "), std::string::npos) << piped.out;
  CliResult terminal = run_cli_in_terminal(*cluster_, args, 120);
  ASSERT_EQ(terminal.exit_code, 0) << terminal.out;
  EXPECT_NE(terminal.out.find("iterations 1/1  rows 20,000/20,000"), std::string::npos)
      << terminal.out;
}

// A program with no update hook is done after one iteration: its progress
// counts to 1, not to the default cap of iterations.
TEST_F(CliOutput, AProgramWithoutAnUpdateHookCountsToOneIteration) {
  CliResult r = run_cli(*cluster_,
                        {"run", "examples/sum", "--param", "dims=3", "--dataset",
                         "values=" LIZARD_TEST_DATA_DIR "/lizard-demo-n16-d3.csv"},
                        {}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(": done, iterations 1/1, "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("iterations 0/1000"), std::string::npos) << r.err;
}

// --dataset NAME=generate:KERNEL runs the manifest's generator on the workers.
TEST_F(CliOutput, ADatasetFromTheManifestsGenerator) {
  CliResult r = run_cli(*cluster_,
                        {"run", "examples/kmeans", "--param", "k=4", "--param", "dims=2",
                         "--dataset", "points=generate:blobs,rows=3000,seed=2", "--state",
                         "centroids=-4,-4,4,-4,-4,4,4,4", "--json", "-q"},
                        {}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json rec = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(rec.is_object()) << r.out;
  EXPECT_EQ(rec["rows"], 3000);
  EXPECT_EQ(rec["params"]["k"], 4);
  CliResult unknown =
      run_cli(*cluster_,
              {"run", "examples/kmeans", "--param", "k=4", "--param", "dims=2", "--dataset",
               "points=generate:nosuch,rows=10", "--state", "centroids=-4,-4,4,-4,-4,4,4,4"},
              {}, 60);
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("nosuch"), std::string::npos) << unknown.err;
  EXPECT_EQ(unknown.err.find("cannot read"), std::string::npos) << unknown.err;
}

// The worker keeps the uploaded rows for the next run; the first run, which
// finds none kept, is no cause for a warning in the worker's log.
TEST_F(CliOutput, UploadsNewToAWorkerLeaveNoWarningInItsLog) {
  std::vector<std::string> args = kmeans_args(points_, 2);
  args.push_back("--upload");
  CliResult r = run_cli(*cluster_, args, {}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream log(cluster_->dir() + "/worker0.log");
  std::string line;
  while (std::getline(log, line))
    EXPECT_FALSE(line.find(" warning ") != std::string::npos &&
                 line.find("cached") != std::string::npos)
        << line;
}

// With no worker connected, the queued run says so at once, naming the
// command that lists the workers, and fails after --worker-wait with that reason.
TEST(CliOutputAlone, ARunWithNoWorkerSaysSoAtOnce) {
  LocalCluster c;
  ASSERT_TRUE(c.start(0, {}, {"--worker-wait", "4"}).ok());
  const auto t0 = std::chrono::steady_clock::now();
  CliResult r = run_cli(c,
                        {"run", "examples/sum", "--param", "dims=3", "--dataset",
                         "values=" LIZARD_TEST_DATA_DIR "/lizard-demo-n16-d3.csv"},
                        {}, 60);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(": queued (no worker is connected; `lizard workers` lists the workers)\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("failed: no worker is connected after 4 s (`lizard workers`"),
            std::string::npos)
      << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
}

// The help of the daemons names every value by what it is and shows its
// default; old flag names still work and are named there.
TEST(CliOutputAlone, HelpShowsDefaultsAndNoParserText) {
  LocalCluster none;  // not started: the commands below need no server
  for (const char* command : {"server", "client", "run", "logs"}) {
    CliResult r = run_cli(none, {command, "--help"}, {}, 30);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    for (const char* raw : {"INT:", "BOOLEAN:", "->", "UINT", " in ["})
      EXPECT_EQ(r.out.find(raw), std::string::npos) << command << ": " << raw << "\n" << r.out;
    EXPECT_NE(r.out.find("-p,--port PORT"), std::string::npos) << r.out;
  }
  // Every kind of dataset source is described where a newcomer looks.
  CliResult run = run_cli(none, {"run", "--help"}, {}, 30);
  for (const char* source :
       {"NAME=upload:ID", "NAME=generate:KERNEL[,rows=N][,seed=S]", "NAME1,NAME2=generate:"})
    EXPECT_NE(run.out.find(source), std::string::npos) << source << "\n" << run.out;
  CliResult server = run_cli(none, {"server", "--help"}, {}, 30);
  EXPECT_NE(server.out.find("--run-timeout,--run-timeout-s SECONDS"), std::string::npos)
      << server.out;
  EXPECT_NE(server.out.find("(default: 60)"), std::string::npos) << server.out;
  CliResult client = run_cli(none, {"client", "--help"}, {}, 30);
  EXPECT_NE(client.out.find("(Env:LIZARD_ADDRESS)"), std::string::npos) << client.out;
  EXPECT_NE(client.out.find("--executor-processes on|off"), std::string::npos) << client.out;
}

TEST(CliOutputAlone, ATypoSuggestsTheNearestCommand) {
  LocalCluster none;
  CliResult r = run_cli(none, {"stauts", "r1"}, {}, 30);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "lizard: unknown command 'stauts'; did you mean 'status'?\n");
}

// A worker takes the server's address from LIZARD_ADDRESS, as the commands do.
TEST(CliOutputAlone, AWorkerJoinsTheServerInLizardAddress) {
  LocalCluster c;
  ASSERT_TRUE(c.start(0).ok());
  CliProcess worker(c, {"client", "--backend", "cpu", "--cpu-threads", "1"},
                    {{"LIZARD_ADDRESS", "127.0.0.1:" + std::to_string(c.port())}});
  EXPECT_TRUE(c.wait_for_workers(1, 30).ok());
  worker.signal(SIGTERM);
  EXPECT_EQ(worker.wait(30).exit_code, 0);
}

}  // namespace
}  // namespace lizard
