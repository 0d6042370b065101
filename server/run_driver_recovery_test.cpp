// Run driver tests of worker loss, re-planning, cancel and shutdown.
#include "server/run_driver.h"

#include <gtest/gtest.h>

#include "server/testing/run_driver_fixture.h"

namespace lizard {
namespace {

using nlohmann::json;
using testing::FakeRun;
using testing::FakeWorker;
using testing::kRows;
using testing::kSums;
using testing::kSumsWithOutput;
using testing::RunDriverTest;

TEST_F(RunDriverTest, ALostWorkerIsReplannedAndTheRunResumesAtTheInterruptedIteration) {
  use_program(kSums);
  FakeWorker& w1 = add_worker();
  FakeWorker& w2 = add_worker();
  w2.intercept = [&](const Message& m) {
    if (!testing::is_iterate(m, 1)) return false;
    lose("w2");
    return true;
  };
  start();
  json r = wait();
  ASSERT_EQ(r["status"], "done") << r.dump(2);
  EXPECT_EQ(r["result"]["state"]["total"], 3 * 55.0);  // as if nothing had happened
  ASSERT_EQ(r["recoveries"].size(), 1u);
  EXPECT_EQ(r["recoveries"][0]["resumed_at_iteration"], 1);
  EXPECT_NE(r["recoveries"][0]["reason"].get<std::string>().find("lost worker w2"),
            std::string::npos);
  // What `lizard run` shows: who was lost, at which iteration, the new plan.
  EXPECT_EQ(r["recoveries"][0]["kind"], "worker_lost");
  EXPECT_EQ(r["recoveries"][0]["lost_at_iteration"], 1);
  EXPECT_EQ(r["recoveries"][0]["workers_lost"], json::array({"w2"}));
  EXPECT_EQ(r["recoveries"][0]["workers"], json::array({"w1"}));
  // w1 took every row for the second attempt and ran iterations 1 and 2 again.
  auto starts = w1.link()->sent_of(MessageType::kRunStart);
  ASSERT_EQ(starts.size(), 2u);
  auto second = RunStartMsg::parse(starts[1].header).value();
  EXPECT_EQ(second.run_id, run_->id + ".1");
  EXPECT_EQ(second.rows, kRows);
  EXPECT_EQ(iterations_sent(w1, run_->id + ".1"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(r["plan"]["executors"].size(), 1u);
  EXPECT_EQ(r["timings"].size(), 3u);
  EXPECT_FALSE(any_executor_busy());
}

TEST_F(RunDriverTest, ALostWorkerMakesARunWithPerRowValuesStartOver) {
  use_program(kSumsWithOutput);
  add_worker();
  FakeWorker& w2 = add_worker();
  w2.intercept = [&](const Message& m) {
    if (!testing::is_iterate(m, 2)) return false;
    lose("w2");
    return true;
  };
  start();
  json r = wait();
  ASSERT_EQ(r["status"], "done") << r.dump(2);
  EXPECT_EQ(r["recoveries"][0]["resumed_at_iteration"], 0);
  EXPECT_EQ(r["recoveries"][0]["lost_at_iteration"], 2);
  EXPECT_EQ(r["result"]["state"]["total"], 3 * 55.0);
  EXPECT_EQ(r["result"]["state"]["steps"], 3);
  EXPECT_EQ(r["timings"].size(), 3u);
  EXPECT_EQ(iterations_sent(fake("w1"), run_->id + ".1"), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(field("y"), doubled_rows());
}

// The outputs of a lost worker's rows are gone with it: the run must not end
// with a part of them, nor fail, while other workers can do the work.
TEST_F(RunDriverTest, AWorkerLostWhileOutputsAreGatheredMakesTheRunStartOver) {
  use_program(kSumsWithOutput);
  add_worker();
  FakeWorker& w2 = add_worker();
  w2.intercept = [&](const Message& m) {
    if (m.type != MessageType::kRunEnd || m.header["want_outputs"] != true) return false;
    lose("w2");
    return true;
  };
  start();
  json r = wait();
  ASSERT_EQ(r["status"], "done") << r.dump(2);
  ASSERT_EQ(r["recoveries"].size(), 1u);
  EXPECT_EQ(r["recoveries"][0]["resumed_at_iteration"], 0);
  EXPECT_EQ(r["result"]["state"]["total"], 3 * 55.0);
  EXPECT_EQ(r["iterations"], 3);
  EXPECT_EQ(field("y"), doubled_rows());
}

TEST_F(RunDriverTest, ARunThatLostEveryExecutorWaitsForNewOnes) {
  use_program(kSums);
  FakeWorker& w1 = add_worker();
  w1.intercept = [&](const Message& m) {
    if (!testing::is_iterate(m, 1)) return false;
    lose("w1");
    return true;
  };
  start();
  // The run asks the scheduler again, first in line.
  const auto deadline = SteadyClock::now() + std::chrono::seconds(10);
  while (book_.pending().empty() && SteadyClock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto pending = book_.pending();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].id, run_->id);
  EXPECT_GT(scheduler_wakes_, 0);
  // The scheduler's part: a new worker's executor goes to the run.
  add_worker();
  ASSERT_TRUE(workers_.claim({{"w2", 0}}, run_->id));
  ASSERT_TRUE(book_.start(run_, {{"w2", 0}}));
  {
    std::lock_guard<std::mutex> l(mu_);
    driver_->deliver({DriverEvent::Kind::kPlacement, "", {}, {{"w2", 0}}});
  }
  json r = wait();
  ASSERT_EQ(r["status"], "done") << r.dump(2);
  EXPECT_EQ(r["result"]["state"]["total"], 3 * 55.0);
  EXPECT_EQ(r["recoveries"][0]["resumed_at_iteration"], 1);
  EXPECT_EQ(iterations_sent(fake("w2"), run_->id + ".1"), (std::vector<int64_t>{1, 2}));
  EXPECT_FALSE(any_executor_busy());
}

TEST_F(RunDriverTest, ARunThatGetsNoNewExecutorsInTimeFails) {
  use_program(kSums);
  worker_wait_s_ = 1;
  FakeWorker& w1 = add_worker();
  w1.intercept = [&](const Message& m) {
    if (m.type != MessageType::kIterate) return false;
    lose("w1");
    return true;
  };
  start();
  json r = wait();
  EXPECT_EQ(r["status"], "failed");
  // The error says what happened: the worker left, not that none had built it.
  const std::string error = r["error"];
  EXPECT_NE(error.find("lost worker w1"), std::string::npos) << error;
  EXPECT_NE(error.find("left during the run"), std::string::npos) << error;
  EXPECT_EQ(error.find("no worker has built"), std::string::npos) << error;
  EXPECT_TRUE(book_.pending().empty());
}

// A run that starts over after a loss and then fails keeps the count of
// the iterations it had completed.
TEST_F(RunDriverTest, AFailedRunShowsTheIterationsThatCompleted) {
  use_program(kSumsWithOutput);
  worker_wait_s_ = 1;
  FakeWorker& w1 = add_worker();
  w1.intercept = [&](const Message& m) {
    if (!testing::is_iterate(m, 2)) return false;
    lose("w1");
    return true;
  };
  start();
  json r = wait();
  EXPECT_EQ(r["status"], "failed");
  EXPECT_EQ(r["iterations"], 2) << r.dump(2);
  EXPECT_EQ(r["timings"].size(), 2u);
  ASSERT_EQ(r["recoveries"].size(), 1u);
  EXPECT_EQ(r["recoveries"][0]["iterations_completed"], 2);
}

TEST_F(RunDriverTest, CancellingARunningRunAbortsItOnItsWorkers) {
  use_program(kSums);
  FakeWorker& w1 = add_worker();
  w1.intercept = [](const Message& m) {
    return testing::is_iterate(m, 1);  // never answers
  };
  start();
  ASSERT_TRUE(w1.link()->wait_for(MessageType::kIterate, 2));
  auto outcome = book_.cancel(run_->id);
  ASSERT_TRUE(outcome.ok());
  EXPECT_EQ(outcome.value(), RunBook::CancelOutcome::kCancelling);
  {
    std::lock_guard<std::mutex> l(mu_);
    driver_->deliver({DriverEvent::Kind::kWake, "", {}, {}});
  }
  json r = wait();
  EXPECT_EQ(r["status"], "cancelled");
  EXPECT_EQ(r["iterations"], 1);
  // Its kernels may never return: the worker is told to kill them, not to end the run.
  EXPECT_TRUE(w1.link()->sent_of(MessageType::kRunEnd).empty());
  auto aborts = w1.link()->sent_of(MessageType::kRunAbort);
  ASSERT_EQ(aborts.size(), 1u);
  auto abort = RunAbortMsg::parse(aborts[0].header);
  ASSERT_TRUE(abort.ok());
  EXPECT_EQ(run_of_wire_id(abort->run_id), run_->id);
  EXPECT_FALSE(any_executor_busy());
}

TEST_F(RunDriverTest, RepliesOfAnEarlierAttemptAreIgnored) {
  use_program(kSums);
  FakeWorker& w1 = add_worker();
  FakeWorker& w2 = add_worker();
  w2.intercept = [&](const Message& m) {
    if (!testing::is_iterate(m, 1)) return false;
    lose("w2");
    return true;
  };
  const std::string stale_id = "r1.0";
  w1.intercept = [&](const Message& m) {
    if (m.type == MessageType::kIterate && wire_run_id_of(m) == "r1.1") {
      // A late answer of the first attempt, with an aggregate that would fail the run.
      std::lock_guard<std::mutex> l(mu_);
      IterationResultMsg late{stale_id, IterateMsg::parse(m.packed)->iteration, true, "", 0};
      driver_->deliver(testing::from_worker("w1", late.to_message("xyz")));
    }
    return false;
  };
  start();
  json r = wait();
  EXPECT_EQ(r["status"], "done") << r.dump(2);
  EXPECT_EQ(r["result"]["state"]["total"], 3 * 55.0);
}

TEST_F(RunDriverTest, AServerShuttingDownEndsTheRun) {
  use_program(kSums);
  FakeWorker& w1 = add_worker();
  w1.intercept = [](const Message& m) { return m.type == MessageType::kIterate; };
  start();
  ASSERT_TRUE(w1.link()->wait_for(MessageType::kIterate, 1));
  stopping_ = true;
  json r = wait();
  EXPECT_EQ(r["status"], "failed");
  EXPECT_EQ(r["error"], "iteration 0: the server is shutting down");
}

}  // namespace
}  // namespace lizard
