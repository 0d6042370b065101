// Kernels built ahead of need: runs queued over new values of a specialised
// param find their kernels built when their turn comes, a run's record says
// "compile" only while a compile runs, and a worker that joins builds its
// programs without holding up the runs of the others.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "json_compare.h"
#include "local_cluster.h"

namespace lizard {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// k-means over generated points, for `k` clusters (k and dims are specialised).
json kmeans_body(int k, int64_t rows, int iterations) {
  std::vector<float> init;
  for (int q = 0; q < k; ++q)
    for (int j = 0; j < 2; ++j) init.push_back(static_cast<float>(q * 3 + j));
  return {{"params", {{"k", k}, {"dims", 2}, {"max_iterations", iterations}, {"threshold", -1}}},
          {"dataset", {{"points", {{"generate", "blobs"}, {"seed", 7}, {"rows", rows}}}}},
          {"state", {{"centroids", init}}}};
}

class AheadBuilds : public ::testing::Test {
 protected:
  void start(int workers, const std::vector<std::string>& worker_args = {}) {
    ASSERT_TRUE(c_.start(workers, worker_args).ok());
    kmeans_ = register_program(c_, LIZARD_SOURCE_DIR "/examples/kmeans");
    ASSERT_FALSE(kmeans_.empty());
  }
  // Submits a run and follows its record until it ends; `said_compiling`:
  // whether the record ever said it waits for a compile; `build`, the build
  // it then named.
  json follow(const json& body, bool* said_compiling, std::string* build = nullptr) {
    const std::string id = submit_run(c_, kmeans_, body);
    EXPECT_FALSE(id.empty());
    *said_compiling = false;
    const auto deadline = Clock::now() + std::chrono::seconds(120);
    while (Clock::now() < deadline) {
      json rec = get_json(c_, "/runtimes/" + id);
      if (rec.value("waiting_for", "") == "compile") {
        *said_compiling = true;
        if (build) *build = rec.value("compiling_build", "");
      }
      const std::string status = rec.value("status", "");
      if (status == "done" || status == "failed" || status == "cancelled") return rec;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ADD_FAILURE() << "run " << id << " did not finish";
    return {};
  }

  // Submits a run that never ends on the worker's one executor, and waits
  // until it runs: runs submitted after it wait in the queue.
  std::string hold_the_executor() {
    const std::string faults = register_program(
        c_, LIZARD_SOURCE_DIR "/tests/e2e/programs/faults");  // mode 1: never returns
    EXPECT_FALSE(faults.empty());
    const std::string holder =
        submit_run(c_, faults,
                   {{"params", {{"mode", 1}}},
                    {"dataset", {{"x", {{"values", std::vector<float>(64, 1.f)}}}}},
                    {"max_iterations", 1}});
    EXPECT_FALSE(holder.empty());
    for (int i = 0; i < 1500 && get_json(c_, "/runtimes/" + holder)["status"] != "running"; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return holder;
  }

  LocalCluster c_;
  std::string kmeans_;
};

// Whether `log` says the optimised build of k-means at `k` was made ahead.
bool built_ahead(const std::string& log, int k) {
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);)
    if (line.find("built K-Means ") != std::string::npos &&
        line.find(",k=" + std::to_string(k) + ",") != std::string::npos &&
        line.find(" ahead of its runs") != std::string::npos)
      return true;
  return false;
}

// Six runs over new values of k, queued behind a run that holds the worker's
// executor: the worker builds their kernels while they wait, so that each
// of them finds its build in the cache when its turn comes, however quickly
// the runs before it go (on a GPU, milliseconds); a second pass over the
// same values gives the same answers.
TEST_F(AheadBuilds, QueuedRunsOverNewValuesFindTheirKernelsBuilt) {
  start(1);
  const std::string holder = hold_the_executor();
  ASSERT_FALSE(holder.empty());
  const std::vector<int> ks = {3, 4, 5, 6, 7, 8};
  std::vector<std::string> ids;
  for (int k : ks) {
    ids.push_back(submit_run(c_, kmeans_, kmeans_body(k, 20000, 10)));
    ASSERT_FALSE(ids.back().empty());
  }
  const std::string log = c_.dir() + "/worker0.log";
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  auto all_built = [&] {
    const std::string text = read_file(log);
    for (int k : ks)
      if (!built_ahead(text, k)) return false;
    return true;
  };
  while (!all_built() && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(all_built()) << "the queued values were not all built ahead within 120 s:\n"
                           << read_file(log);
  ASSERT_TRUE(http_request("DELETE", c_.uri() + "/runtimes/" + holder, "", "", 30).ok());
  std::vector<json> first;
  for (const auto& id : ids) first.push_back(wait_until_finished(c_, id, 120));
  for (size_t i = 0; i < ks.size(); ++i) {
    ASSERT_EQ(first[i].value("status", ""), "done") << first[i].dump(2);
    const json& phases = first[i]["phases"];
    EXPECT_TRUE(phases.value("compile_cache_hit", false)) << "k=" << ks[i] << " " << phases.dump();
    EXPECT_EQ(phases.value("compile_ms", -1.0), 0.0) << "k=" << ks[i];
  }
  for (size_t i = 0; i < ks.size(); ++i) {
    json again =
        wait_until_finished(c_, submit_run(c_, kmeans_, kmeans_body(ks[i], 20000, 10)), 60);
    ASSERT_EQ(again.value("status", ""), "done") << again.dump(2);
    EXPECT_TRUE(again["phases"].value("compile_cache_hit", false));
    expect_numbers_close(again["result"]["state"], first[i]["result"]["state"], 1e-4,
                         "k=" + std::to_string(ks[i]));
  }
}

// The record says "compile" (and the progress line "compiling the … build
// of k=…") while a new value's kernels compile, naming the build: the quick
// one where GPU executors begin on it (partitions small enough for the fast
// build), else the optimised one; and never
// while a run whose build is in the cache loads its rows, however long that
// takes.
TEST_F(AheadBuilds, TheRecordSaysCompilingOnlyWhileACompileRuns) {
  start(1);
  bool compiling = false;
  std::string build;
  json rec = follow(kmeans_body(9, 2000000, 1), &compiling, &build);
  ASSERT_EQ(rec.value("status", ""), "done") << rec.dump(2);
  EXPECT_FALSE(rec["phases"].value("compile_cache_hit", true));
  EXPECT_TRUE(compiling) << "a run that compiled never said so";
  const char* backend = std::getenv("LIZARD_E2E_BACKEND");
  const bool gpu = backend && std::string(backend) == "cuda";
  EXPECT_EQ(build, gpu ? "quick" : "optimised");
  rec = follow(kmeans_body(9, 2000000, 1), &compiling);
  ASSERT_EQ(rec.value("status", ""), "done") << rec.dump(2);
  EXPECT_TRUE(rec["phases"].value("compile_cache_hit", false));
  EXPECT_FALSE(compiling) << "a run whose build was in the cache said it compiled";
  if (!gpu) return;
  // A partition too large for the fast build waits for the optimised one,
  // and the record names that (288 MB of rows on one GPU).
  json large = kmeans_body(10, 24000000, 1);
  large["executors"] = 1;
  rec = follow(large, &compiling, &build);
  ASSERT_EQ(rec.value("status", ""), "done") << rec.dump(2);
  EXPECT_TRUE(compiling);
  EXPECT_EQ(build, "optimised");
  EXPECT_FALSE(rec["phases"].value("quick_build", false))
      << rec["phases"].dump();  // said when true
}

// How many of `ks` the worker's log says were built ahead.
int built_ahead_of(const std::string& log, const std::vector<int>& ks) {
  int n = 0;
  for (int k : ks) n += built_ahead(log, k);
  return n;
}

// Twelve runs over new values of k wait behind a run that holds the
// executor: the first eight values (BuildAheadRequests::kPerProgram) are
// built ahead, and the other four are not while those runs wait.
TEST_F(AheadBuilds, AtMostEightValuesOfAProgramAreBuiltAheadAtATime) {
  start(1);
  const std::string holder = hold_the_executor();
  ASSERT_FALSE(holder.empty());
  std::vector<int> first, rest;
  for (int k = 10; k < 22; ++k) {
    ASSERT_FALSE(submit_run(c_, kmeans_, kmeans_body(k, 1000, 2)).empty());
    (k < 18 ? first : rest).push_back(k);
  }
  const std::string log = c_.dir() + "/worker0.log";
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  while (built_ahead_of(read_file(log), first) < 8 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(built_ahead_of(read_file(log), first), 8) << read_file(log);
  std::this_thread::sleep_for(std::chrono::seconds(2));  // time to start more, were any asked
  EXPECT_EQ(built_ahead_of(read_file(log), rest), 0) << read_file(log);
  ASSERT_TRUE(http_request("DELETE", c_.uri() + "/runtimes/" + holder, "", "", 30).ok());
}

// Cancelled runs take their builds ahead with them: with one build at a
// time, seven queued values whose runs are cancelled at once are dropped
// before they begin (one or two may have begun meanwhile), while the run
// that still waits has its value built.
TEST_F(AheadBuilds, ABuildAheadGoesWithItsCancelledRuns) {
  start(1, {"--ahead-builds", "1"});
  const std::string holder = hold_the_executor();
  ASSERT_FALSE(holder.empty());
  std::vector<std::string> ids;
  std::vector<int> cancelled;
  for (int k = 30; k < 38; ++k) {
    ids.push_back(submit_run(c_, kmeans_, kmeans_body(k, 1000, 2)));
    ASSERT_FALSE(ids.back().empty());
    if (k > 30) cancelled.push_back(k);
  }
  for (size_t i = 1; i < ids.size(); ++i)
    ASSERT_TRUE(http_request("DELETE", c_.uri() + "/runtimes/" + ids[i], "", "", 30).ok());
  const std::string log = c_.dir() + "/worker0.log";
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  while (!built_ahead(read_file(log), 30) && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(built_ahead(read_file(log), 30)) << read_file(log);
  std::this_thread::sleep_for(std::chrono::seconds(5));  // time for the dropped ones, were they not
  EXPECT_LE(built_ahead_of(read_file(log), cancelled), 2) << read_file(log);
  ASSERT_TRUE(http_request("DELETE", c_.uri() + "/runtimes/" + holder, "", "", 30).ok());
  json rec = wait_until_finished(c_, ids[0], 120);
  EXPECT_EQ(rec.value("status", ""), "done") << rec.dump(2);
}

// A worker that joins builds the registered programs in the background: a
// run that takes every free executor starts on the workers that have them
// built, without waiting for the newcomer's build (8 s here).
TEST_F(AheadBuilds, AWorkerJoiningHoldsUpNoRunOnTheOthers) {
  start(1);
  ::setenv("LIZARD_TEST_BUILD_DELAY_MS", "8000", 1);
  Status added = c_.add_worker();
  ::unsetenv("LIZARD_TEST_BUILD_DELAY_MS");
  ASSERT_TRUE(added.ok());
  ASSERT_TRUE(c_.wait_for_workers(2).ok());
  const auto t0 = Clock::now();
  json rec = wait_until_finished(c_, submit_run(c_, kmeans_, kmeans_body(2, 1000, 2)), 30);
  const double took = seconds_since(t0);
  ASSERT_EQ(rec.value("status", ""), "done") << rec.dump(2);
  EXPECT_LT(took, 6.0) << "the run waited for the joining worker's build";
  EXPECT_EQ(plan_workers(rec), (std::set<std::string>{"w1"}));
}

}  // namespace
}  // namespace lizard
