// What a user following a run sees when it is interrupted and goes on:
// `lizard run` prints one line for each recovery as the record gets it (a
// worker lost, the server restarted), the run ends done with the exact
// answer, and the server's log calls a run it resumes interrupted, not
// failed.  The tally program (tests/e2e/programs/tally) adds integers, so
// its answer is exact whatever the plan.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli_process.h"
#include "dataset/npy.h"
#include "local_cluster.h"

namespace lizard {
namespace {

using nlohmann::json;

constexpr const char* kTally = LIZARD_SOURCE_DIR "/tests/e2e/programs/tally";
constexpr int64_t kRows = 200000;
constexpr int kIterations = 30;

std::string write_rows(const std::string& dir) {
  std::vector<int64_t> x(kRows);
  for (int64_t i = 0; i < kRows; ++i) x[static_cast<size_t>(i)] = i % 1000;
  const std::string path = dir + "/x.npy";
  std::ofstream(path, std::ios::binary) << npy_bytes(DType::kInt64, {kRows}, x.data());
  return path;
}

// tally's total: each iteration adds sum(x) and the iteration's index per row.
int64_t exact_total() {
  int64_t sum = 0;
  for (int64_t i = 0; i < kRows; ++i) sum += i % 1000;
  return kIterations * sum + kRows * (kIterations * (kIterations - 1) / 2);
}

std::vector<std::string> tally_args(const std::string& rows) {
  return {"run",       kTally,     "--param", "max_iterations=" + std::to_string(kIterations),
          "--param",   "spin=400", "--param", "pause_ms=60",
          "--dataset", "x=" + rows};
}

// The one run the server knows of, once it has completed `n` iterations;
// null when that does not happen within a minute.
json wait_for_iterations(const LocalCluster& c, int64_t n) {
  for (int i = 0; i < 1200; ++i) {
    const json runs = get_json(c, "/runtimes");
    if (runs.is_array() && !runs.empty()) {
      const json rec = get_json(c, "/runtimes/" + runs[0].value("runtime_id", ""));
      if (rec.value("iterations", int64_t{0}) >= n && rec.value("status", "") == "running")
        return rec;
      if (rec.value("status", "") == "done") return nullptr;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return nullptr;
}

class RecoveryOutput : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(c_.start(2, {"--cpu-threads", "1"}).ok());
    rows_ = write_rows(c_.dir());
  }

  // The run's final record, after checking the CLI ended well with the exact total.
  json expect_done_exactly(const CliResult& r, const std::string& id) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("total = " + std::to_string(exact_total())), std::string::npos)
        << r.out << r.err;
    const json rec = get_json(c_, "/runtimes/" + id);
    EXPECT_EQ(rec.value("status", ""), "done") << rec.dump(2);
    EXPECT_EQ(rec.value(json::json_pointer("/result/state/total"), int64_t{-1}), exact_total())
        << rec.dump(2);
    EXPECT_EQ(rec.value("iterations", int64_t{-1}), kIterations);
    return rec;
  }

  LocalCluster c_;
  std::string rows_;
};

TEST_F(RecoveryOutput, ALostWorkerIsShownWithTheIterationAndTheNewPlan) {
  CliProcess cli(c_, tally_args(rows_));
  const json running = wait_for_iterations(c_, 3);
  ASSERT_TRUE(running.is_object()) << "the run did not reach iteration 3 while running";
  c_.kill_worker(1, SIGKILL);
  const CliResult r = cli.wait(240);
  const json rec = expect_done_exactly(r, running["runtime_id"]);
  ASSERT_TRUE(rec.contains("recoveries")) << "the kill came too late to test recovery";
  const json& entry = rec["recoveries"][0];
  ASSERT_EQ(entry.value("kind", ""), "worker_lost") << entry.dump();
  const int64_t at = entry["lost_at_iteration"];
  EXPECT_GE(at, 3);
  EXPECT_EQ(entry["resumed_at_iteration"], at);  // tally keeps nothing per row
  ASSERT_EQ(entry["workers_lost"].size(), 1u) << entry.dump();
  const std::string line = "worker " + entry["workers_lost"][0].get<std::string>() +
                           " lost at iteration " + std::to_string(at) +
                           ": re-planned over 1 worker, resuming at " + std::to_string(at) + "\n";
  EXPECT_NE(r.err.find(line), std::string::npos) << "no `" << line << "` in:\n" << r.err;
}

TEST_F(RecoveryOutput, AServerRestartIsShownAndTheLogSaysInterruptedNotFailed) {
  CliProcess cli(c_, tally_args(rows_));
  const json running = wait_for_iterations(c_, 3);
  ASSERT_TRUE(running.is_object()) << "the run did not reach iteration 3 while running";
  const std::string id = running["runtime_id"];
  // As `systemctl restart` does: SIGTERM, then a new server on the same state.
  ASSERT_EQ(kill(c_.server_pid(), SIGTERM), 0);
  int wstatus = 0;
  ASSERT_EQ(waitpid(c_.server_pid(), &wstatus, 0), c_.server_pid());
  ASSERT_TRUE(c_.restart_server().ok());
  const CliResult r = cli.wait(240);
  const json rec = expect_done_exactly(r, id);
  ASSERT_TRUE(rec.contains("recoveries")) << rec.dump(2);
  const json& entry = rec["recoveries"].back();
  ASSERT_EQ(entry.value("kind", ""), "server_restart") << entry.dump();
  const int64_t at = entry["lost_at_iteration"];
  EXPECT_GE(at, 1);
  EXPECT_EQ(entry["resumed_at_iteration"], at);
  const std::string line = "server restarted at iteration " + std::to_string(at) +
                           ": resuming at " + std::to_string(at) + "\n";
  EXPECT_NE(r.err.find(line), std::string::npos) << "no `" << line << "` in:\n" << r.err;
  const std::string log = read_file(c_.dir() + "/server.log");
  EXPECT_NE(log.find(id + " interrupted by the server's shutdown at iteration"), std::string::npos)
      << log;
  EXPECT_EQ(log.find(id + " failed"), std::string::npos) << log;
}

}  // namespace
}  // namespace lizard
