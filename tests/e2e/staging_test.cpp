// Kept rows made visible and steerable: POST /datasets/stage loads a file's
// rows onto executors before any run, so that the first run over the file
// reads none of it; GET /datasets lists the rows each executor keeps;
// POST /datasets/drop and DELETE /datasets/<id> let them go, after which a
// run reads the file again; `lizard datasets` and `lizard stage` show them.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cli_process.h"
#include "dataset/npy.h"
#include "local_cluster.h"

namespace lizard {
namespace {

using nlohmann::json;

constexpr int64_t kRows = 4000, kDims = 2;
constexpr uint64_t kBytes = kRows * kDims * sizeof(double);

void write_values(const std::string& path) {
  std::vector<double> v(kRows * kDims);
  for (int64_t i = 0; i < kRows; ++i) v[i * 2] = i, v[i * 2 + 1] = 2.0 * i;
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      << npy_bytes(DType::kFloat64, {kRows, kDims}, v.data());
}

class Staging : public ::testing::Test {
 protected:
  void start(int executors = 1, std::vector<std::string> server_args = {}) {
    ASSERT_TRUE(c_.start(1, {"--cpu-executors", std::to_string(executors)}, server_args).ok());
    hash_ = register_program(c_, LIZARD_SOURCE_DIR "/examples/sum");
    ASSERT_FALSE(hash_.empty());
    path_ = c_.dir() + "/values.npy";
    write_values(path_);
  }
  // The answer to a POST: status and parsed body.
  std::pair<int, json> post(const std::string& path, const json& body) {
    auto r = c_.post(path, body.dump());
    if (!r.ok()) return {0, json()};
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  json run(int executors = 1, const std::string& program = "") {
    json body = {{"params", {{"dims", kDims}}},
                 {"dataset", {{"values", {{"path", path_}}}}},
                 {"executors", executors}};
    return post("/runtime/" + (program.empty() ? hash_ : program) + "?wait=1", body).second;
  }
  static void expect_sums(const json& rec) {
    ASSERT_EQ(rec.value("status", ""), "done") << rec.dump(2);
    EXPECT_DOUBLE_EQ(rec["result"]["aggregate"]["sums"][0].get<double>(),
                     (kRows - 1) * kRows / 2.0);
  }
  // GET /datasets' kept rows once `done` holds of them (15 s at most).
  json kept_when(const std::function<bool(const json&)>& done) {
    json kept;
    for (int i = 0; i < 150; ++i) {
      kept = get_json(c_, "/datasets").value("kept", json::array());
      if (done(kept)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return kept;
  }
  LocalCluster c_;
  std::string hash_, path_;
};

TEST_F(Staging, AStagedFileIsNotReadByTheFirstRun) {
  start();
  // One executor, as the run below asks: a worker may have more (its GPUs).
  auto [status, staged] =
      post("/datasets/stage", {{"path", path_}, {"program", hash_}, {"executors", 1}});
  ASSERT_EQ(status, 200) << staged.dump();
  EXPECT_EQ(staged["rows"], kRows);
  EXPECT_EQ(staged["dtype"], "float64");
  EXPECT_EQ(staged["width"], kDims);
  EXPECT_EQ(staged["bytes"], kBytes);
  ASSERT_EQ(staged["executors"].size(), 1u) << staged.dump();
  EXPECT_EQ(staged["executors"][0]["rows"], json({0, kRows}));
  EXPECT_EQ(staged["executors"][0]["was_kept"], false);
  json rec = run();
  expect_sums(rec);
  EXPECT_EQ(rec["phases"]["file_bytes_read"], 0u) << rec["phases"].dump();
  EXPECT_EQ(rec["phases"]["file_bytes_kept"], kBytes);
  // Staging again finds them kept.
  auto again = post("/datasets/stage", {{"path", path_}, {"program", hash_}, {"executors", 1}});
  ASSERT_EQ(again.first, 200) << again.second.dump();
  EXPECT_EQ(again.second["executors"][0]["was_kept"], true);
}

// Rows are kept per program: those staged for one program's runs are not
// seen by another program's run, which reads the file, in its own process.
TEST_F(Staging, RowsStagedForOneProgramAreNotKeptForAnother) {
  start();
  const std::string copy = c_.dir() + "/sum-copy";  // the same kernels, another checksum
  std::filesystem::copy(LIZARD_SOURCE_DIR "/examples/sum", copy,
                        std::filesystem::copy_options::recursive);
  std::ofstream(copy + "/config.yaml", std::ios::app) << "\n# a copy\n";
  const std::string other = register_program(c_, copy);
  ASSERT_FALSE(other.empty());
  ASSERT_NE(other, hash_);
  auto [status, staged] = post("/datasets/stage", {{"path", path_}, {"program", hash_}});
  ASSERT_EQ(status, 200) << staged.dump();
  json rec = run(1, other);
  expect_sums(rec);
  EXPECT_EQ(rec["phases"]["file_bytes_read"], kBytes) << rec["phases"].dump();
  EXPECT_EQ(rec["phases"]["file_bytes_kept"], 0u);
  rec = run(1, hash_);
  expect_sums(rec);
  EXPECT_EQ(rec["phases"]["file_bytes_kept"], kBytes) << rec["phases"].dump();
}

TEST_F(Staging, AStageNamesARegisteredProgram) {
  start();
  auto none = post("/datasets/stage", {{"path", path_}});
  EXPECT_EQ(none.first, 400) << none.second.dump();
  EXPECT_NE(none.second.value("error", "").find("name the program whose runs will read the rows"),
            std::string::npos)
      << none.second.dump();
  const std::string unknown(64, 'a');
  auto missing = post("/datasets/stage", {{"path", path_}, {"program", unknown}});
  EXPECT_EQ(missing.first, 404) << missing.second.dump();
  EXPECT_EQ(
      missing.second.value("error", ""),
      "no program " + unknown + " is registered: register it before staging rows for its runs");
}

TEST_F(Staging, RowsStagedOverTwoExecutorsAreSplitAsARunSplitsThem) {
  start(2);
  auto [status, staged] =
      post("/datasets/stage", {{"path", path_}, {"program", hash_}, {"executors", 2}});
  ASSERT_EQ(status, 200) << staged.dump();
  ASSERT_EQ(staged["executors"].size(), 2u) << staged.dump();
  json rec = run(2);
  expect_sums(rec);
  EXPECT_EQ(rec["phases"]["file_bytes_read"], 0u) << rec["phases"].dump();
  EXPECT_EQ(rec["phases"]["file_bytes_kept"], kBytes);
}

TEST_F(Staging, TheListingShowsKeptRowsAndDroppingThemMakesTheNextRunRead) {
  start();
  expect_sums(run());
  json kept = kept_when([](const json& k) { return !k.empty(); });
  ASSERT_EQ(kept.size(), 1u) << kept.dump();
  EXPECT_EQ(kept[0]["source"], path_);
  EXPECT_EQ(kept[0]["rows"], json({0, kRows}));
  EXPECT_EQ(kept[0]["bytes"], kBytes);
  EXPECT_EQ(kept[0]["executor"], 0);
  EXPECT_EQ(kept[0]["in_use"], false);
  EXPECT_EQ(get_json(c_, "/datasets")["uploads"], json::array());

  auto [status, dropped] = post("/datasets/drop", {{"source", path_}});
  ASSERT_EQ(status, 200) << dropped.dump();
  EXPECT_EQ(dropped["workers_told"], 1);
  EXPECT_TRUE(kept_when([](const json& k) { return k.empty(); }).empty());
  json rec = run();
  expect_sums(rec);
  EXPECT_EQ(rec["phases"]["file_bytes_read"], kBytes) << rec["phases"].dump();
  EXPECT_EQ(rec["phases"]["file_bytes_kept"], 0u);
}

TEST_F(Staging, DeletingAnUploadDropsItsKeptRows) {
  start();
  std::ifstream in(path_, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto up = c_.post("/datasets", bytes);
  ASSERT_TRUE(up.ok());
  ASSERT_EQ(up->status, 201) << up->body;
  const std::string id = json::parse(up->body)["id"];
  json body = {
      {"params", {{"dims", kDims}}}, {"dataset", {{"values", {{"upload", id}}}}}, {"executors", 1}};
  expect_sums(post("/runtime/" + hash_ + "?wait=1", body).second);
  json kept = kept_when([&](const json& k) { return k.size() == 1 && k[0]["source"] == id; });
  ASSERT_EQ(kept.size(), 1u) << kept.dump();
  auto del = http_request("DELETE", c_.uri() + "/datasets/" + id, "", "", 30);
  ASSERT_TRUE(del.ok());
  EXPECT_EQ(del->status, 200) << del->body;
  EXPECT_TRUE(kept_when([](const json& k) { return k.empty(); }).empty());
}

TEST_F(Staging, StagingOutsideTheDataRootsIsRefused) {
  const std::string root = c_.dir() + "/data";
  std::filesystem::create_directories(root);
  start(1, {"--data-root", root});
  auto [status, body] =
      post("/datasets/stage", {{"path", path_}, {"program", hash_}});  // in the cluster's dir
  EXPECT_EQ(status, 403) << body.dump();
  EXPECT_EQ(body["error"], "dataset path is outside the server's data roots (--data-root)");
  auto bad = post("/datasets/stage",
                  {{"path", root + "/x.raw"}, {"program", hash_}, {"dtype", "float32"}});
  EXPECT_EQ(bad.first, 400) << bad.second.dump();
  EXPECT_EQ(bad.second["error"], "a raw file needs `dtype` and `width` (values per row)");
  auto upload = post("/datasets/stage", {{"upload", "u0123456789ab"}});
  EXPECT_EQ(upload.first, 400) << upload.second.dump();
  EXPECT_TRUE(c_.server_alive());
}

TEST_F(Staging, TheCommandLineStagesListsAndRemoves) {
  start();
  CliResult staged = run_cli(c_, {"stage", path_, "--program", hash_}, {}, 60);
  ASSERT_EQ(staged.exit_code, 0) << staged.err;
  EXPECT_NE(staged.out.find("staged " + path_ + " (npy, 4000 rows of 2 float64), 62.5 KiB"),
            std::string::npos)
      << staged.out;
  EXPECT_NE(staged.out.find("0..4000"), std::string::npos) << staged.out;
  kept_when([](const json& k) { return !k.empty(); });
  CliResult listed = run_cli(c_, {"datasets"}, {}, 60);
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("no uploads"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("WORKER"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find(path_), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("62.5 KiB"), std::string::npos) << listed.out;
  // Several targets at once, as `lizard cancel` takes several runs.
  const std::string other = path_ + ".other";
  CliResult removed = run_cli(c_, {"datasets", "rm", path_, other}, {}, 60);
  ASSERT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_EQ(removed.out, "dropped the kept rows of " + path_ + " on 1 worker(s)\n" +
                             "dropped the kept rows of " + other + " on 1 worker(s)\n");
  kept_when([](const json& k) { return k.empty(); });
  CliResult empty = run_cli(c_, {"datasets"}, {}, 60);
  EXPECT_NE(empty.out.find("no kept rows"), std::string::npos) << empty.out;
}

}  // namespace
}  // namespace lizard
