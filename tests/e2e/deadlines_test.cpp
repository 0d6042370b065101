// Deadlines for workers' answers, end to end: a worker that answers pings
// but never answers run_start, or never returns from an iteration, is
// dropped from the run within the server's deadline; the run re-plans onto
// the other worker (or fails saying which deadline was missed), and no later
// run is placed on the silent worker.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "fake_worker.h"
#include "local_cluster.h"

namespace lizard {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kDeadlineS = 4;

json sum_body(json executors) {
  return {
      {"params", {{"dims", 2}}},
      {"executors", std::move(executors)},
      {"dataset", {{"values", {{"values", {{1.5, 2.5}, {3.0, 4.0}, {5.5, -1.0}, {1.0, 1.0}}}}}}}};
}

std::string id_of(const LocalCluster& c, const std::string& hostname) {
  for (const auto& w : get_json(c, "/clients"))
    if (w["hardware"].value("hostname", "") == hostname) return w.value("id", "");
  return "";
}

class Deadlines : public ::testing::Test {
 protected:
  // A real CPU worker and a fake one that answers `answers`.
  void start(FakeWorker::Answers answers, int real_workers = 1) {
    ASSERT_TRUE(c_.start(real_workers, {"--backend", "cpu", "--cpu-threads", "1"},
                         {"--load-timeout", std::to_string(kDeadlineS), "--iteration-timeout",
                          std::to_string(kDeadlineS), "--worker-wait", "2"})
                    .ok());
    fake_ =
        std::make_unique<FakeWorker>(c_.port(), "silent-node", std::vector{fake_cpu()}, answers);
    ASSERT_TRUE(c_.wait_for_workers(static_cast<size_t>(real_workers) + 1).ok());
    fake_id_ = id_of(c_, "silent-node");
    ASSERT_FALSE(fake_id_.empty());
    sum_ = register_program(c_, LIZARD_SOURCE_DIR "/examples/sum");
    ASSERT_FALSE(sum_.empty());
  }

  // A run over both workers: the fake misses its deadline, the run re-plans
  // onto the real worker and gives the right sums; then a run that could
  // take both is placed on the real worker alone.
  void expect_replanned(const std::string& deadline) {
    const auto t0 = Clock::now();
    const std::string id = submit_run(c_, sum_, sum_body(2));
    ASSERT_FALSE(id.empty());
    json rec = wait_until_finished(c_, id, 30);
    ASSERT_EQ(rec.value("status", ""), "done") << rec.dump();
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(kDeadlineS + 15));
    EXPECT_EQ(rec["result"]["aggregate"]["sums"], json({11.0, 6.5})) << rec.dump();
    ASSERT_EQ(rec["recoveries"].size(), 1u) << rec.dump();
    EXPECT_NE(rec["recoveries"][0]
                  .value("reason", "")
                  .find("worker " + fake_id_ + " missed the " + deadline + " deadline (" +
                        std::to_string(kDeadlineS) + " s)"),
              std::string::npos)
        << rec.dump();

    json fake;
    for (const auto& w : get_json(c_, "/clients"))
      if (w.value("id", "") == fake_id_) fake = w;
    EXPECT_NE(fake.value("unresponsive", "").find("missed the " + deadline + " deadline"),
              std::string::npos)
        << fake.dump();

    const auto t1 = Clock::now();
    const std::string next = submit_run(c_, sum_, sum_body({{"min", 1}, {"max", 2}}));
    ASSERT_FALSE(next.empty());
    rec = wait_until_finished(c_, next, 30);
    ASSERT_EQ(rec.value("status", ""), "done") << rec.dump();
    EXPECT_EQ(rec["result"]["aggregate"]["sums"], json({11.0, 6.5})) << rec.dump();
    EXPECT_EQ(plan_workers(rec).count(fake_id_), 0u) << rec.dump();
    EXPECT_FALSE(rec.contains("recoveries") && !rec["recoveries"].empty()) << rec.dump();
    EXPECT_LT(Clock::now() - t1, std::chrono::seconds(kDeadlineS));
  }

  LocalCluster c_;
  std::unique_ptr<FakeWorker> fake_;
  std::string fake_id_, sum_;
};

TEST_F(Deadlines, AWorkerThatNeverAnswersRunStartIsDroppedAndTheRunReplans) {
  start(FakeWorker::Answers::kNothing);
  expect_replanned("run_start");
}

TEST_F(Deadlines, AWorkerWhoseIterationNeverReturnsIsDroppedAndTheRunReplans) {
  start(FakeWorker::Answers::kRunStart);
  expect_replanned("iteration 0");
}

// Alone, the silent worker drives the run's loop: the run fails within the
// deadline (and --worker-wait), saying which deadline was missed.
TEST_F(Deadlines, ARunWithNoOtherWorkerFailsWithTheDeadlineMissed) {
  start(FakeWorker::Answers::kRunStart, /*real_workers=*/0);
  const auto t0 = Clock::now();
  const std::string id = submit_run(c_, sum_, sum_body(1));
  ASSERT_FALSE(id.empty());
  json rec = wait_until_finished(c_, id, 30);
  EXPECT_EQ(rec.value("status", ""), "failed") << rec.dump();
  EXPECT_NE(rec.value("error", "").find("worker " + fake_id_ + " missed the iteration 0 deadline"),
            std::string::npos)
      << rec.dump();
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(kDeadlineS + 15));
}

}  // namespace
}  // namespace lizard
