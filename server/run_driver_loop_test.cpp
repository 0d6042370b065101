// The run driver when the run's one worker drives its loop: the record and
// result are those of the server-driven loop, the worker is sent one loop
// and no iterate, and a worker that cannot drive it gets iterations as before.
#include <gtest/gtest.h>

#include "server/run_driver.h"
#include "server/testing/run_driver_fixture.h"

namespace lizard {
namespace {

using nlohmann::json;
using testing::FakeRun;
using testing::FakeWorker;
using testing::kRows;
using testing::kSums;
using testing::RunDriverTest;

class RunDriverLoopTest : public RunDriverTest {
 protected:
  FakeWorker& add_looping_worker(size_t executors = 1) {
    FakeWorker& w = add_worker(executors);
    const Manifest& m = program_->image.manifest;
    w.loop_step = [&m](const FakeRun& run, const std::string& state, int64_t it, bool* last) {
      *last = false;
      return testing::sums_loop_step(m, run, state, it);
    };
    return w;
  }
};

TEST_F(RunDriverLoopTest, TheWorkerDrivesTheLoopAndTheRecordIsTheSame) {
  use_program(kSums);
  FakeWorker& w = add_looping_worker(2);
  start({{"max_iterations", 4}});
  json r = wait();
  ASSERT_EQ(r["status"], "done") << r.dump(2);
  EXPECT_EQ(r["iterations"], 4);
  EXPECT_EQ(r["result"]["state"]["total"], 4 * 55.0);
  EXPECT_EQ(r["result"]["state"]["steps"], 4);
  EXPECT_EQ(r["result"]["aggregate"]["count"], kRows);
  ASSERT_EQ(r["timings"].size(), 4u);
  EXPECT_EQ(r["timings"][3]["iteration"], 3);
  EXPECT_EQ(r["timings"][3]["kernel_ms"], 2.0);
  EXPECT_EQ(r["timings"][3]["ms"], 3.0);  // as the worker measured it
  EXPECT_EQ(r["timings"][3]["fold_ms"], 0.5);
  EXPECT_EQ(r["timings"][3]["state"]["total"], 4 * 55.0);
  EXPECT_FALSE(r["phases"].contains("quick_build_iterations"));  // no quick build
  EXPECT_EQ(w.link()->sent_of(MessageType::kLoop).size(), 1u);
  EXPECT_TRUE(w.link()->sent_of(MessageType::kIterate).empty());
  auto loop = LoopMsg::parse(w.link()->sent_of(MessageType::kLoop)[0].header).value();
  EXPECT_EQ(loop.first_iteration, 0);
  EXPECT_EQ(loop.max_iterations, 4);
}

// The record counts the iterations some worker ran on a quick build, in a
// loop the worker drives ...
TEST_F(RunDriverLoopTest, TheRecordCountsTheIterationsAWorkersLoopRanOnAQuickBuild) {
  use_program(kSums);
  FakeWorker& w = add_looping_worker(1);
  w.quick_iterations = 2;
  start({{"max_iterations", 5}});
  json r = wait();
  ASSERT_EQ(r["status"], "done") << r.dump(2);
  EXPECT_EQ(r["phases"]["quick_build_iterations"], 2);
  EXPECT_EQ(w.link()->sent_of(MessageType::kLoop).size(), 1u);
}

// ... and in one the server drives over several workers: until the last of
// them switched.
TEST_F(RunDriverLoopTest, TheRecordCountsTheIterationsAnyWorkerRanOnAQuickBuild) {
  use_program(kSums);
  FakeWorker& a = add_looping_worker(1);
  FakeWorker& b = add_looping_worker(1);
  a.quick_iterations = 2;
  b.quick_iterations = 3;
  start({{"max_iterations", 5}});
  json r = wait();
  ASSERT_EQ(r["status"], "done") << r.dump(2);
  EXPECT_EQ(r["phases"]["quick_build_iterations"], 3);
  EXPECT_FALSE(b.link()->sent_of(MessageType::kIterate).empty());
}

TEST_F(RunDriverLoopTest, AWorkerThatCannotDriveItGetsIterationsInstead) {
  use_program(kSums);
  FakeWorker& w = add_worker();  // answers the loop with `unsupported`
  start();
  json r = wait();
  ASSERT_EQ(r["status"], "done") << r.dump(2);
  EXPECT_EQ(r["result"]["state"]["total"], 3 * 55.0);
  EXPECT_EQ(w.link()->sent_of(MessageType::kLoop).size(), 1u);
  EXPECT_EQ(iterations_sent(w, run_->id + ".0"), (std::vector<int64_t>{0, 1, 2}));
}

TEST_F(RunDriverLoopTest, RunsOverSeveralWorkersAndTheSwitchOffAreDrivenHere) {
  use_program(kSums);
  FakeWorker& a = add_looping_worker();
  FakeWorker& b = add_looping_worker();
  start();
  json r = wait();
  ASSERT_EQ(r["status"], "done") << r.dump(2);
  EXPECT_EQ(r["result"]["state"]["total"], 3 * 55.0);
  EXPECT_TRUE(a.link()->sent_of(MessageType::kLoop).empty());
  EXPECT_TRUE(b.link()->sent_of(MessageType::kLoop).empty());
}

TEST_F(RunDriverLoopTest, WithTheLoopSwitchedOffTheServerDrives) {
  use_program(kSums);
  worker_loop_ = false;
  FakeWorker& w = add_looping_worker();
  start();
  json r = wait();
  ASSERT_EQ(r["status"], "done") << r.dump(2);
  EXPECT_TRUE(w.link()->sent_of(MessageType::kLoop).empty());
  EXPECT_EQ(iterations_sent(w, run_->id + ".0").size(), 3u);
}

TEST_F(RunDriverLoopTest, AWorkersLoopErrorFailsTheRunWithItsMessage) {
  use_program(kSums);
  FakeWorker& w = add_looping_worker();
  w.intercept = [this](const Message& m) {
    if (m.type != MessageType::kLoop) return false;
    LoopStepMsg failed;
    failed.run_id = LoopMsg::parse(m.header)->run_id;
    failed.iteration = 0;
    failed.ok = false;
    failed.error = "host hook update_global_state ended the hook process";
    std::lock_guard<std::mutex> l(mu_);
    driver_->deliver(testing::from_worker("w1", failed.to_message()));
    return true;
  };
  start();
  json r = wait();
  EXPECT_EQ(r["status"], "failed");
  EXPECT_NE(r.value("error", "").find("update_global_state"), std::string::npos) << r.dump(2);
}

}  // namespace
}  // namespace lizard
