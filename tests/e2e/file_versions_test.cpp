// A run reads one version of each file it names by path, with real
// processes: the version the server counted its rows in when the run was
// submitted.  A file that changes after that (grown, rewritten in place
// with its mtime put back, or replaced by a rename) fails the run with a
// message naming the file and what changed, whether the change comes
// before the rows are first loaded, before a re-plan after a lost worker,
// or before a resume after a server restart; the run never ends `done`
// with rows of two versions, or with a prefix of a longer file.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "dataset/npy.h"
#include "local_cluster.h"
#include "net/http_client.h"

namespace lizard {
namespace {

using nlohmann::json;

constexpr const char* kFaults = LIZARD_SOURCE_DIR "/tests/e2e/programs/faults";

// `rows` rows of `value`, one column, in `format` (examples/sum reads float64).
std::string column_file(const std::string& format, int64_t rows, double value) {
  std::vector<double> v(static_cast<size_t>(rows), value);
  if (format == "npy") return npy_bytes(DType::kFloat64, {rows, 1}, v.data());
  if (format == "raw")
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double));
  std::string csv;
  for (double x : v) csv += std::to_string(x) + "\n";
  return csv;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Writes `bytes` beside `path` and renames it into place, as `mv` does.
void rename_into_place(const std::string& path, const std::string& bytes) {
  const std::string next = path + ".next";
  write_file(next, bytes);
  ASSERT_EQ(std::rename(next.c_str(), path.c_str()), 0);
}

std::string error_of(const json& rec) {
  return rec.value("error", "");
}

// Expects the run failed because `path` changed since the run first read it,
// in `what` ("size 8000 -> 16000").
void expect_failed_on_change(const json& rec, const std::string& path, const std::string& what) {
  EXPECT_EQ(rec.value("status", ""), "failed") << rec.dump(2);
  const std::string changed = path + " changed since the run first read it: ";
  EXPECT_NE(error_of(rec).find(changed), std::string::npos) << rec.dump(2);
  EXPECT_NE(error_of(rec).find(what), std::string::npos) << rec.dump(2);
}

// One worker with one executor: a run of the faults program whose kernel
// never returns holds it, so that the next run waits, submitted, while its
// file changes.
class FileChangedBeforeLoading : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(c_.start(1, {"--cpu-executors", "1"}).ok());
    faults_ = register_program(c_, kFaults);
    sum_ = register_program(c_, LIZARD_SOURCE_DIR "/examples/sum");
    ASSERT_FALSE(faults_.empty());
    ASSERT_FALSE(sum_.empty());
  }

  // Holds the executor until release().
  void hold() {
    holder_ = submit_run(c_, faults_,
                         {{"params", {{"mode", 1}}},
                          {"dataset", {{"x", {{"values", std::vector<float>(64, 1.f)}}}}},
                          {"max_iterations", 1}});
    ASSERT_FALSE(holder_.empty());
    json rec;
    for (int i = 0; i < 1500; ++i) {
      rec = get_json(c_, "/runtimes/" + holder_);
      if (rec["status"] == "running" && rec.contains("progress")) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    FAIL() << "the holding run did not start: " << rec.dump(2);
  }
  void release() {
    auto cancel = http_request("DELETE", c_.uri() + "/runtimes/" + holder_, "", "", 30);
    ASSERT_TRUE(cancel.ok());
    EXPECT_EQ(wait_until_finished(c_, holder_, 30).value("status", ""), "cancelled");
  }

  // Submits examples/sum over `path` while the executor is held, calls
  // `change` and lets the run load; its record.
  template <typename Change>
  json run_across_a_change(const std::string& path, const std::string& format, Change change) {
    hold();
    const std::string id =
        submit_run(c_, sum_,
                   {{"params", {{"dims", 1}}},
                    {"dataset", {{"values", {{"path", path}, {"format", format}}}}}});
    EXPECT_FALSE(id.empty());
    EXPECT_EQ(get_json(c_, "/runtimes/" + id).value("status", ""), "queued");
    change();
    release();
    // Past the worker's 60 s wait for a busy executor, so that a run that
    // never got the executor shows why.
    return wait_until_finished(c_, id, 90);
  }

  LocalCluster c_;
  std::string faults_, sum_, holder_;
};

// The file grows (a longer file renamed into place) after the server counted
// its rows: the run fails, where it read the first 1,000 rows of the new
// file and ended `done` with sum 2,000.  For each binary and text format.
TEST_F(FileChangedBeforeLoading, AFileThatGrewFailsTheRunInEveryFormat) {
  for (const std::string format : {"npy", "raw", "csv"}) {
    SCOPED_TRACE(format);
    const std::string path = c_.dir() + "/grows." + format;
    const std::string small = column_file(format, 1000, 1.0);
    const std::string large = column_file(format, 2000, 2.0);
    write_file(path, small);
    json rec = run_across_a_change(path, format, [&] { rename_into_place(path, large); });
    expect_failed_on_change(
        rec, path, "size " + std::to_string(small.size()) + " -> " + std::to_string(large.size()));
    EXPECT_FALSE(rec.contains("result")) << rec.dump(2);
  }
}

// Rewritten in place, the same size, with its mtime put back (utimensat):
// only the ctime tells the versions apart, and it fails the run.
TEST_F(FileChangedBeforeLoading, ARewriteWithItsMtimePutBackFailsTheRun) {
  const std::string path = c_.dir() + "/rewritten.npy";
  write_file(path, column_file("npy", 1000, 1.0));
  json rec = run_across_a_change(path, "npy", [&] {
    namespace fs = std::filesystem;
    const auto mtime = fs::last_write_time(path);
    write_file(path, column_file("npy", 1000, 3.0));
    fs::last_write_time(path, mtime);
  });
  expect_failed_on_change(rec, path, "ctime ");
  EXPECT_EQ(error_of(rec).find("size "), std::string::npos) << rec.dump(2);
  EXPECT_EQ(error_of(rec).find("mtime "), std::string::npos) << rec.dump(2);
}

// An unchanged file still runs, and its record shows the version it read.
TEST_F(FileChangedBeforeLoading, AnUnchangedFileRunsAndTheRecordNamesItsVersion) {
  const std::string path = c_.dir() + "/same.npy";
  write_file(path, column_file("npy", 1000, 1.0));
  json rec = run_across_a_change(path, "npy", [] {});
  ASSERT_EQ(rec.value("status", ""), "done") << rec.dump(2);
  EXPECT_EQ(rec["result"]["aggregate"]["sums"][0], 1000.0);
  ASSERT_EQ(rec["files"].size(), 1u) << rec.dump(2);
  EXPECT_EQ(rec["files"][0]["field"], "values");
  EXPECT_EQ(rec["files"][0]["path"], path);
  EXPECT_EQ(rec["files"][0]["identity"]["size"], std::filesystem::file_size(path));
}

// Logistic regression over files named by path: a run of many iterations
// that resumes at the interrupted iteration (it keeps nothing per row).
class FileChangedDuringARun : public ::testing::Test {
 protected:
  void start(int workers) {
    ASSERT_TRUE(c_.start(workers, {"--cpu-threads", "1"}).ok());
    hash_ = register_program(c_, LIZARD_SOURCE_DIR "/examples/logreg");
    ASSERT_FALSE(hash_.empty());
    x_ = c_.dir() + "/x.npy";
    y_ = c_.dir() + "/y.npy";
    write_file(x_, features(1));
    write_file(y_, labels());
  }
  static constexpr int64_t kRows = 200000;
  static constexpr int kDims = 4;
  static std::string features(uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> g(0.f, 1.f);
    std::vector<float> x(static_cast<size_t>(kRows) * kDims);
    for (float& v : x) v = g(rng);
    return npy_bytes(DType::kFloat32, {kRows, kDims}, x.data());
  }
  static std::string labels() {
    std::vector<float> y(static_cast<size_t>(kRows));
    for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(i % 2);
    return npy_bytes(DType::kFloat32, {kRows}, y.data());
  }
  // A run far longer than the time the test takes to change the file and
  // cut it short (seconds on a GPU, where an iteration is a fraction of a
  // millisecond); it ends at the change, so a CPU never runs it through.
  std::string submit() {
    return submit_run(
        c_, hash_,
        {{"params", {{"dims", kDims}, {"lr", 0.1}, {"tol", -1}, {"max_iterations", 20000}}},
         {"dataset", {{"x", {{"path", x_}}}, {"y", {{"path", y_}}}}}});
  }
  // Waits until the run has completed `n` iterations; false if it ended first.
  bool wait_for_iterations(const std::string& id, int64_t n) {
    for (int i = 0; i < 3000; ++i) {
      json r = get_json(c_, "/runtimes/" + id);
      if (r.value("iterations", 0) >= n) return r.value("status", "") == "running";
      if (r.value("status", "") != "running" && r.value("status", "") != "queued") return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  // Puts another x.npy of the same shape and other values into place.
  void replace_features() { rename_into_place(x_, features(2)); }

  LocalCluster c_;
  std::string hash_, x_, y_;
};

// A worker lost after the file was replaced: the re-planned run would read
// the new rows for the rest of its iterations and end `done` with a value
// neither file gives; it fails instead, naming the file.
TEST_F(FileChangedDuringARun, AReplanAfterALostWorkerReadsNoOtherVersion) {
  start(2);
  const std::string id = submit();
  ASSERT_TRUE(wait_for_iterations(id, 3));
  replace_features();
  c_.kill_worker(1, SIGKILL);
  json rec = wait_until_finished(c_, id, 120);
  expect_failed_on_change(rec, x_, "inode ");
  EXPECT_TRUE(rec.contains("recoveries")) << rec.dump(2);
}

// The server restarted after the file was replaced: the run would resume
// from its checkpoint on the new rows; it fails instead, naming the file.
TEST_F(FileChangedDuringARun, AResumeAfterAServerRestartReadsNoOtherVersion) {
  start(1);
  const std::string id = submit();
  ASSERT_TRUE(wait_for_iterations(id, 3));
  replace_features();
  ASSERT_TRUE(c_.restart_server().ok());
  json rec = wait_until_finished(c_, id, 120);
  expect_failed_on_change(rec, x_, "inode ");
  EXPECT_NE(error_of(rec).find("the server restarted"), std::string::npos) << rec.dump(2);
}

// The same restart with the file as it was: the run resumes and ends done.
TEST_F(FileChangedDuringARun, AResumeAfterAServerRestartOnTheSameVersionGoesOn) {
  start(1);
  const std::string id =
      submit_run(c_, hash_,
                 {{"params", {{"dims", kDims}, {"lr", 0.1}, {"tol", -1}, {"max_iterations", 400}}},
                  {"dataset", {{"x", {{"path", x_}}}, {"y", {{"path", y_}}}}}});
  ASSERT_TRUE(wait_for_iterations(id, 3));
  ASSERT_TRUE(c_.restart_server().ok());
  json rec = wait_until_finished(c_, id, 120);
  EXPECT_EQ(rec.value("status", ""), "done") << rec.dump(2);
  EXPECT_EQ(rec.value("iterations", 0), 400) << rec.dump(2);
}

}  // namespace
}  // namespace lizard
