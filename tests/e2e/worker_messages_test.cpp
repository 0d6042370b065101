// A worker's answers are checked, end to end: a run_ready that does not
// parse, an iteration_result for another iteration than the one asked, or an
// aggregate larger than the run's shape fails the run with the reason and
// marks the worker in GET /clients; none of them counts as an answer.  The
// worker is a FakeWorker that answers as each test writes it, beside a real
// server.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "fake_worker.h"
#include "local_cluster.h"
#include "protocol/messages.h"

namespace lizard {
namespace {

using nlohmann::json;

// examples/sum's aggregate with dims 2: sums (2 x float64) at 0, count
// (int64) at 16, each field 16-byte aligned (program/layout.h).
constexpr size_t kPartialBytes = 32;
std::string sum_partial(double a, double b, int64_t count) {
  std::string p(kPartialBytes, '\0');
  std::memcpy(p.data(), &a, 8);
  std::memcpy(p.data() + 8, &b, 8);
  std::memcpy(p.data() + 16, &count, 8);
  return p;
}

json ready_of(const Message& start) {
  auto h = RunStartMsg::parse(start.header);
  return {{"run_id", h.ok() ? h->run_id : ""}, {"ok", true}, {"error", ""}};
}

// How the fake answers: its run_ready header, and the iteration and
// aggregate bytes of its iteration_result.
struct Answers {
  std::function<json(json ready)> ready = [](json r) { return r; };
  int64_t iteration_shift = 0;  // the iteration it reports: the one asked plus this
  std::string aggregate = sum_partial(4.5, 6.5, 2);
};

class WorkerMessages : public ::testing::Test {
 protected:
  // The server drives the iterations (the fake runs no loop); the fake is
  // the only worker.
  void start(Answers answers) {
    answers_ = std::move(answers);
    ASSERT_TRUE(c_.start(0, {}, {"--no-worker-loop", "--worker-wait", "5"}).ok());
    fake_ = std::make_unique<FakeWorker>(c_.port(), "odd-node", std::vector{fake_cpu()},
                                         [this](FakeWorker& w, const Message& m) { answer(w, m); });
    ASSERT_TRUE(c_.wait_for_workers(1).ok());
    for (const auto& wk : get_json(c_, "/clients")) fake_id_ = wk.value("id", "");
    sum_ = register_program(c_, LIZARD_SOURCE_DIR "/examples/sum");
    ASSERT_FALSE(sum_.empty());
  }

  void answer(FakeWorker& w, const Message& m) {
    if (m.type == MessageType::kRunStart)
      return w.send(MessageType::kRunReady, answers_.ready(ready_of(m)));
    if (m.type == MessageType::kIterate) {
      auto h = IterateMsg::parse(m.packed);
      if (!h.ok()) return;
      IterationResultMsg r{h->run_id, h->iteration + answers_.iteration_shift, true, ""};
      w.send(r.to_message(answers_.aggregate));
    }
  }

  // Submits examples/sum over two rows; its finished record.
  json run_sum() {
    const json body = {{"params", {{"dims", 2}}},
                       {"dataset", {{"values", {{"values", {{1.5, 2.5}, {3.0, 4.0}}}}}}}};
    const std::string id = submit_run(c_, sum_, body);
    EXPECT_FALSE(id.empty());
    return wait_until_finished(c_, id, 30);
  }

  // The run failed with `reason`, and GET /clients marks the worker with it.
  void expect_refused(const json& rec, const std::string& reason) {
    EXPECT_EQ(rec.value("status", ""), "failed") << rec.dump();
    EXPECT_NE(rec.value("error", "").find("worker " + fake_id_ + " sent " + reason),
              std::string::npos)
        << rec.dump();
    json mark;
    for (const auto& wk : get_json(c_, "/clients"))
      if (wk.value("id", "") == fake_id_) mark = wk.value("bad_message", json());
    ASSERT_TRUE(mark.is_string()) << get_json(c_, "/clients").dump();
    EXPECT_NE(mark.get<std::string>().find(reason), std::string::npos) << mark;
  }

  LocalCluster c_;
  Answers answers_;
  std::unique_ptr<FakeWorker> fake_;
  std::string fake_id_, sum_;
};

// The fake itself gives the right answer when it answers well: the checks
// below fail the run for what the fake changes, not for the fake.
TEST_F(WorkerMessages, AWellFormedAnswerGivesTheRunItsResult) {
  start({});
  json rec = run_sum();
  ASSERT_EQ(rec.value("status", ""), "done") << rec.dump();
  EXPECT_EQ(rec["result"]["aggregate"]["sums"], json({4.5, 6.5})) << rec.dump();
}

TEST_F(WorkerMessages, ARunReadyWithoutOkFailsTheRun) {
  Answers a;
  a.ready = [](json r) {
    r.erase("ok");
    return r;
  };
  start(a);
  expect_refused(run_sum(), "a run_ready that does not parse");
}

TEST_F(WorkerMessages, ARunReadyWhoseOkIsAStringFailsTheRun) {
  Answers a;
  a.ready = [](json r) {
    r["ok"] = "yes";
    return r;
  };
  start(a);
  expect_refused(run_sum(), "a run_ready that does not parse");
}

TEST_F(WorkerMessages, AResultForALaterIterationFailsTheRun) {
  Answers a;
  a.iteration_shift = 999;
  start(a);
  expect_refused(run_sum(), "an iteration_result for iteration 999");
}

TEST_F(WorkerMessages, AResultForANegativeIterationFailsTheRun) {
  Answers a;
  a.iteration_shift = -5;
  start(a);
  expect_refused(run_sum(), "an iteration_result for iteration -5");
}

// 10 MiB of whole partial aggregates from a worker of one executor, where
// the run's built-in reducers make one.
TEST_F(WorkerMessages, AnAggregateLargerThanTheRunsShapeIsRefused) {
  Answers a;
  a.aggregate.clear();
  while (a.aggregate.size() + kPartialBytes <= (size_t{10} << 20))
    a.aggregate += sum_partial(0, 0, 0);
  const std::string reason = "an aggregate of " + std::to_string(a.aggregate.size()) +
                             " bytes; expected " + std::to_string(kPartialBytes);
  start(a);
  expect_refused(run_sum(), reason);
}

}  // namespace
}  // namespace lizard
