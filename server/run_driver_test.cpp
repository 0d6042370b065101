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

TEST_F(RunDriverTest, ARunGoesThroughItsWorkersToTheEnd) {
  use_program(kSums);
  FakeWorker& w1 = add_worker();
  FakeWorker& w2 = add_worker();
  start();
  json r = wait();
  EXPECT_EQ(r["status"], "done") << r.dump(2);
  EXPECT_EQ(r["iterations"], 3);
  EXPECT_EQ(r["result"]["state"]["total"], 3 * 55.0);
  EXPECT_EQ(r["result"]["state"]["steps"], 3);
  EXPECT_EQ(r["result"]["aggregate"]["count"], kRows);
  ASSERT_EQ(r["timings"].size(), 3u);
  EXPECT_EQ(r["timings"][2]["kernel_ms"], 2.0);
  EXPECT_EQ(r["phases"]["compile_ms"], 1.5);
  EXPECT_TRUE(r["phases"].contains("iterations_ms"));
  EXPECT_FALSE(r.contains("recoveries"));

  // Each worker was sent its rows once, then each iteration with the state
  // as it stood, then the end of the run.
  auto s1 = w1.link()->sent_of(MessageType::kRunStart);
  auto s2 = w2.link()->sent_of(MessageType::kRunStart);
  ASSERT_EQ(s1.size(), 1u);
  ASSERT_EQ(s2.size(), 1u);
  auto p1 = RunStartMsg::parse(s1[0].header).value(), p2 = RunStartMsg::parse(s2[0].header).value();
  EXPECT_EQ(p1.run_id, run_->id + ".0");
  EXPECT_EQ(p1.first_row, 0);
  EXPECT_EQ(p2.first_row, p1.rows);
  EXPECT_EQ(p1.rows + p2.rows, kRows);
  EXPECT_EQ(iterations_sent(w1, p1.run_id), (std::vector<int64_t>{0, 1, 2}));
  auto iterates = w2.link()->sent_of(MessageType::kIterate);
  ASSERT_EQ(iterates.size(), 3u);
  double total_sent = 0;
  std::memcpy(&total_sent, iterates[2].payload.data(), sizeof total_sent);  // state.total first
  EXPECT_EQ(total_sent, 2 * 55.0);
  auto ends = w1.link()->sent_of(MessageType::kRunEnd);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_FALSE(RunEndMsg::parse(ends[0].header)->want_outputs);

  // The executors went back before the run was reported done, and the record was stored.
  EXPECT_EQ(exits_, 1);
  EXPECT_FALSE(busy_when_answered_);
  RunBook reopened(dir_.path());
  EXPECT_EQ(reopened.get_json(run_->id).value()["status"], "done");
}

// An iteration's record (with its state's fields as JSON) and checkpoint
// are written once the next iteration's frames are on their way, while the
// workers compute, rather than between two iterations; the last iteration's
// once the iterations stop.
TEST_F(RunDriverTest, AnIterationIsRecordedWhileTheNextOneRuns) {
  use_program(kSums);
  FakeWorker& w1 = add_worker();
  add_worker();
  std::vector<size_t> recorded;  // iterations in the record as each iterate went out
  w1.link()->watch([&](const std::string& frame) {  // on the driver's thread
    if (frame_type(frame).value() == MessageType::kIterate)
      recorded.push_back(run_->timings.size());
  });
  start();
  json r = wait();
  EXPECT_EQ(r["status"], "done") << r.dump(2);
  EXPECT_EQ(recorded, (std::vector<size_t>{0, 0, 1}));
  ASSERT_EQ(r["timings"].size(), 3u);
  EXPECT_EQ(r["timings"][2]["state"]["steps"], 3);
}

TEST_F(RunDriverTest, OutputsAreGatheredInRowOrder) {
  use_program(kSumsWithOutput);
  add_worker(2);
  add_worker(1);
  start();
  json r = wait();
  ASSERT_EQ(r["status"], "done") << r.dump(2);
  EXPECT_EQ(r["plan"]["executors"].size(), 3u) << r["plan"].dump();
  EXPECT_EQ(field("y"), doubled_rows());
  auto ends = fake("w1").link()->sent_of(MessageType::kRunEnd);
  ASSERT_EQ(ends.size(), 1u);
  auto end = RunEndMsg::parse(ends[0].header).value();
  EXPECT_TRUE(end.want_outputs);
  EXPECT_EQ(end.outputs, std::vector<std::string>{"y"});
}

TEST_F(RunDriverTest, NoOutputsAreAskedForWhenTheRequestWantsNone) {
  use_program(kSumsWithOutput);
  add_worker();
  start({{"outputs", json::array()}});
  json r = wait();
  ASSERT_EQ(r["status"], "done") << r.dump(2);
  EXPECT_FALSE(r["fields"].contains("y")) << r.dump(2);
  EXPECT_TRUE(r["fields"].contains("total"));  // state and aggregate fields are always kept
  auto ends = fake("w1").link()->sent_of(MessageType::kRunEnd);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_FALSE(RunEndMsg::parse(ends[0].header)->want_outputs);
}

TEST_F(RunDriverTest, AWorkersErrorFailsTheRunWithItsMessage) {
  use_program(kSums);
  FakeWorker& w1 = add_worker();
  FakeWorker& w2 = add_worker();
  w2.intercept = [&](const Message& m) {
    if (!testing::is_iterate(m, 1)) return false;
    std::lock_guard<std::mutex> l(mu_);
    IterationResultMsg bad{wire_run_id_of(m), 1, false, "CUDA error: out of memory", 0};
    driver_->deliver(testing::from_worker("w2", bad.to_message()));
    return true;
  };
  start();
  json r = wait();
  EXPECT_EQ(r["status"], "failed");
  const std::string error = r["error"];
  EXPECT_NE(error.find("iteration 1"), std::string::npos) << error;
  EXPECT_NE(error.find("worker w2: CUDA error: out of memory"), std::string::npos) << error;
  EXPECT_FALSE(r.contains("recoveries"));
  EXPECT_EQ(w1.link()->sent_of(MessageType::kRunEnd).size(), 1u);
  EXPECT_EQ(w2.link()->sent_of(MessageType::kRunEnd).size(), 1u);
  EXPECT_FALSE(any_executor_busy());
}

TEST_F(RunDriverTest, AWorkerThatCannotLoadItsRowsFailsTheRun) {
  use_program(kSums);
  FakeWorker& w1 = add_worker();
  w1.intercept = [&](const Message& m) {
    if (m.type != MessageType::kRunStart) return false;
    std::lock_guard<std::mutex> l(mu_);
    RunReadyMsg bad{m.header["run_id"], false, "this worker has not built program x", 0, false, {}};
    driver_->deliver(testing::from_worker("w1", bad.to_message()));
    return true;
  };
  start();
  json r = wait();
  EXPECT_EQ(r["status"], "failed");
  EXPECT_NE(r["error"].get<std::string>().find(
                "loading the dataset: worker w1: this worker has not built program x"),
            std::string::npos)
      << r["error"];
  EXPECT_TRUE(w1.link()->sent_of(MessageType::kIterate).empty());
}

TEST_F(RunDriverTest, AnAggregateOfTheWrongSizeIsAnError) {
  use_program(kSums);
  FakeWorker& w1 = add_worker();
  w1.kernel = [](const FakeRun&, const IterateMsg&) { return std::string("abc"); };
  start();
  json r = wait();
  EXPECT_EQ(r["status"], "failed");
  EXPECT_NE(r["error"].get<std::string>().find("worker w1 sent an aggregate of 3 bytes"),
            std::string::npos)
      << r["error"];
}

TEST_F(RunDriverTest, ADatasetThatDoesNotFitFailsBeforeAnythingIsSent) {
  use_program(kSums);
  FakeWorker& w1 = add_worker(1, (uint64_t{64} << 20) + 100);  // room for a few rows only
  start();
  json r = wait();
  EXPECT_EQ(r["status"], "failed");
  EXPECT_NE(r["error"].get<std::string>().find("the dataset does not fit: 10 rows x 8 bytes"),
            std::string::npos)
      << r["error"];
  EXPECT_TRUE(w1.link()->sent_of(MessageType::kRunStart).empty());
}

}  // namespace
}  // namespace lizard
