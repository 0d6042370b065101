// The run driver with host hooks in their hook process: one process per run,
// gone when the run ends; a hook that crashes, exits or hangs fails its run
// with a message naming the hook and how its process ended; a cancel ends a
// hook that is running.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "server/run_driver.h"
#include "server/testing/run_driver_fixture.h"

namespace lizard {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::FakeWorker;
using testing::kSums;
using testing::RunDriverTest;
using Clock = std::chrono::steady_clock;

// kSums's hook, doing `fault` at iteration 1.
std::string host_with_fault(const std::string& fault) {
  return R"(#include <stdlib.h>
#include "lizard_program.h"
extern "C" int update_global_state(const global_params_t*, const agg_res_t* r,
                                   global_state_t* s, int64_t iteration) {
  if (iteration == 1) { )" +
         fault + R"( }
  s->total += *r->sum;
  s->steps = iteration + 1;
  return 0;
}
)";
}

// The hook processes this test process has started and not yet reaped.
size_t hook_processes() {
  size_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const size_t paren = line.rfind(')');
    if (paren == std::string::npos) continue;
    char state = 0;
    long ppid = 0;
    if (std::sscanf(line.c_str() + paren + 1, " %c %ld", &state, &ppid) != 2) continue;
    if (ppid != ::getpid()) continue;
    std::ifstream cmd(e.path() / "cmdline");
    std::string args((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
    if (args.find("hook-host") != std::string::npos) ++n;
  }
  return n;
}

// The hook process the program was checked in waits idle for the first run,
// serves it alone, and waits again for the next: a run never waits for one
// to start.
TEST_F(RunDriverTest, ARunTakesTheProgramsIdleHookProcessAndLeavesItForTheNext) {
  use_program(kSums);
  FakeWorker& w1 = add_worker();
  std::atomic<int> during{-1};
  w1.intercept = [&](const Message& m) {
    if (testing::is_iterate(m, 1)) during = static_cast<int>(hook_processes());
    return false;
  };
  ASSERT_EQ(hook_processes(), 1u);
  start();
  json r = wait();
  ASSERT_EQ(r["status"], "done") << r.dump(2);
  EXPECT_EQ(r["result"]["state"]["total"], 3 * 55.0);
  EXPECT_EQ(during, 1);
  EXPECT_EQ(hook_processes(), 1u);
}

TEST_F(RunDriverTest, AHookThatSegfaultsFailsItsRunWithHowItEnded) {
  use_program(kSums, host_with_fault("volatile int* nowhere = 0; *nowhere = 1;"));
  FakeWorker& w1 = add_worker();
  start();
  json r = wait();
  EXPECT_EQ(r["status"], "failed");
  EXPECT_EQ(r["error"],
            "host hook update_global_state (iteration 1) ended the hook process: killed by signal "
            "11 (SIGSEGV, a segmentation fault)");
  EXPECT_EQ(r["iterations"], 1);
  EXPECT_EQ(w1.link()->sent_of(MessageType::kRunEnd).size(), 1u);
  EXPECT_FALSE(any_executor_busy());
  EXPECT_EQ(hook_processes(), 0u);
}

TEST_F(RunDriverTest, AHookThatExitsFailsItsRun) {
  use_program(kSums, host_with_fault("exit(0);"));
  add_worker();
  start();
  json r = wait();
  EXPECT_EQ(r["status"], "failed");
  EXPECT_EQ(r["error"],
            "host hook update_global_state (iteration 1) ended the hook process: exited with "
            "status 0");
}

TEST_F(RunDriverTest, AnInitHookThatAbortsFailsTheRunBeforeAnyWork) {
  use_program(kSums, std::string(testing::kHost) + R"(
#include <stdlib.h>
extern "C" void init_global_state(const global_params_t*, global_state_t*) { abort(); })");
  FakeWorker& w1 = add_worker();
  start();
  json r = wait();
  EXPECT_EQ(r["status"], "failed");
  EXPECT_EQ(r["error"],
            "host hook init_global_state ended the hook process: killed by signal 6 (SIGABRT, "
            "abort())");
  EXPECT_TRUE(w1.link()->sent_of(MessageType::kRunStart).empty());
}

TEST_F(RunDriverTest, ACustomAggregateHookThatExitsFailsTheRun) {
  use_program(R"(
sources: {cuda: kernel.cu, host: host.cpp}
dataset: {x: {type: float64, shape: [rows]}}
state: {total: {type: float64}, steps: {type: int64}}
aggregate:
  sum:   {type: float64, reduce: custom}
  count: {type: int64, reduce: sum}
iterate: [k]
)",
              std::string(testing::kHost) + R"(
#include <stdlib.h>
extern "C" void aggregate(const global_params_t*, agg_res_t*, const agg_res_t*) { exit(3); })");
  add_worker();
  start();
  json r = wait();
  EXPECT_EQ(r["status"], "failed");
  EXPECT_EQ(r["error"],
            "host hook aggregate (iteration 0) ended the hook process: exited with status 3");
}

TEST_F(RunDriverTest, AHookThatNeverReturnsIsKilledAfterTheTimeLimit) {
  use_program(kSums, host_with_fault("for (volatile long spin = 0;; spin = spin + 1) {}"));
  hook_options_.call_timeout_ms = 300;
  hook_options_.timeout_setting = "--hook-timeout";
  add_worker();
  start();
  json r = wait();
  EXPECT_EQ(r["status"], "failed");
  EXPECT_EQ(r["error"],
            "host hook update_global_state (iteration 1) did not finish within 300 ms "
            "(--hook-timeout); the hook process was killed");
  EXPECT_EQ(hook_processes(), 0u);
}

TEST_F(RunDriverTest, ACancelEndsAHookThatIsRunning) {
  use_program(kSums, host_with_fault("for (volatile long spin = 0;; spin = spin + 1) {}"));
  FakeWorker& w1 = add_worker();
  start();
  // Iteration 1's results are in once iteration 2 would be sent; the hook
  // spins before that, so wait a little past the second iterate.
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (iterations_sent(w1, run_->id + ".0").size() < 2 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(hook_processes(), 1u);
  const auto t0 = Clock::now();
  ASSERT_TRUE(book_.cancel(run_->id).ok());
  json r = wait();
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(2));
  EXPECT_EQ(r["status"], "cancelled") << r.dump(2);
  EXPECT_EQ(hook_processes(), 0u);
}

}  // namespace
}  // namespace lizard
