#include "server/run_driver.h"

#include <gtest/gtest.h>

#include <cstring>
#include <future>

#include "common/clock.h"
#include "dataset/npy.h"
#include "server/testing/fakes.h"

namespace lizard {
namespace {

using nlohmann::json;
using testing::FakeRun;
using testing::FakeWorker;
using testing::TempDir;

// Sums x over the rows; the host hook adds each iteration's sum to the state
// and never stops on its own, so a run makes max_iterations iterations.
const char* kSums = R"(
sources: {cuda: kernel.cu, host: host.cpp}
dataset:
  x: {type: float64, shape: [rows]}
state:
  total: {type: float64}
  steps: {type: int64}
aggregate:
  sum:   {type: float64, reduce: sum}
  count: {type: int64, reduce: sum}
iterate: [k]
)";
// The same with a field that kernels fill and that is gathered at the end.
const char* kSumsWithOutput = R"(
sources: {cuda: kernel.cu, host: host.cpp}
dataset:
  x: {type: float64, shape: [rows]}
  y: {type: float64, shape: [rows], input: false, output: true}
state:
  total: {type: float64}
  steps: {type: int64}
aggregate:
  sum:   {type: float64, reduce: sum}
  count: {type: int64, reduce: sum}
iterate: [k]
)";
const char* kHost = R"(
#include "lizard_program.h"
extern "C" int update_global_state(const global_params_t*, const agg_res_t* r,
                                   global_state_t* s, int64_t iteration) {
  s->total += *r->sum;
  s->steps = iteration + 1;
  return 0;
}
)";

constexpr int kRows = 10;  // x = 1, 2, ..., 10: the sum is 55

std::vector<double> rows_of(const FakeRun& run, const std::string& field) {
  const std::string& bytes = run.rows.at(field);
  std::vector<double> v(bytes.size() / sizeof(double));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(double));
  return v;
}

// What a worker's kernels give: the sum of its x and its row count.
std::string sums_kernel(const Manifest& m, const FakeRun& run) {
  SectionBuffer agg = make_section(m.aggregate, m, ParamValues{}).value();
  double sum = 0;
  for (double x : rows_of(run, "x")) sum += x;
  const int64_t count = run.start.rows;
  std::memcpy(agg.data(*agg.find("sum")), &sum, sizeof sum);
  std::memcpy(agg.data(*agg.find("count")), &count, sizeof count);
  return std::string(agg.bytes.begin(), agg.bytes.end());
}

// y = 2x for the worker's rows.
std::string doubled(const FakeRun& run, const std::string&) {
  std::string out;
  for (double x : rows_of(run, "x")) {
    const double y = 2 * x;
    out.append(reinterpret_cast<const char*>(&y), sizeof y);
  }
  return out;
}

// A RunBook, a WorkerRegistry with fake workers, and one RunDriver.
class RunDriverTest : public ::testing::Test {
 protected:
  void use_program(const char* config) {
    program_ = testing::make_test_program(config, kHost);
    ASSERT_NE(program_, nullptr);
  }

  FakeWorker& add_worker(size_t executors = 1, uint64_t free_bytes = 0) {
    const std::string id = "w" + std::to_string(fakes_.size() + 1);
    auto w = std::make_unique<FakeWorker>(id, [this](const std::string& from, Message m) {
      std::lock_guard<std::mutex> l(mu_);
      if (driver_) driver_->deliver({DriverEvent::Kind::kMessage, from, std::move(m), {}});
    });
    const Manifest& m = program_->image.manifest;
    w->kernel = [&m](const FakeRun& run, const IterateMsg&) { return sums_kernel(m, run); };
    w->output = doubled;
    EXPECT_EQ(workers_.connect(w->link()), id);
    EXPECT_TRUE(workers_.hello(id, w->hello(executors, free_bytes), {}));
    fakes_.push_back(std::move(w));
    return *fakes_.back();
  }

  // The worker leaves, as the hub reports it: gone from the registry, then
  // the driver hears of it.
  void lose(const std::string& id) {
    fake(id).go_silent();
    workers_.remove(id);
    std::lock_guard<std::mutex> l(mu_);
    driver_->deliver({DriverEvent::Kind::kWorkerLost, id, {}, {}});
  }

  FakeWorker& fake(const std::string& id) {
    for (auto& f : fakes_)
      if (f->id() == id) return *f;
    throw std::runtime_error("no fake " + id);
  }

  std::vector<ExecutorRef> all_executors() const {
    std::vector<ExecutorRef> out;
    for (const auto& w : workers_.view())
      for (size_t i = 0; i < w.executors.size(); ++i) out.push_back({w.id, static_cast<int>(i)});
    return out;
  }

  // Queues a run of x = 1..kRows, places it on `executors` and starts its driver.
  void start(json body = {}, std::vector<ExecutorRef> executors = {}) {
    if (executors.empty()) executors = all_executors();
    std::vector<double> x;
    for (int i = 1; i <= kRows; ++i) x.push_back(i);
    if (!body.contains("dataset")) body["dataset"] = {{"x", {{"values", x}}}};
    if (!body.contains("max_iterations")) body["max_iterations"] = 3;
    auto req = parse_run_request(program_->image, body);
    ASSERT_TRUE(req.ok()) << req.status().message();
    run_ = book_.submit(program_, program_->image.hash, std::move(req).value());
    ASSERT_TRUE(workers_.claim(executors, run_->id));
    ASSERT_TRUE(book_.start(run_, executors));
    book_.add_waiter(run_, [this](HttpResponse r) {
      busy_when_answered_ = any_executor_busy();
      finished_.set_value(json::parse(r.body));
    });
    DriverContext ctx;
    ctx.book = &book_;
    ctx.workers = &workers_;
    ctx.worker_wait_s = worker_wait_s_;
    ctx.stopping = [this] { return stopping_.load(); };
    ctx.wake_scheduler = [this] { ++scheduler_wakes_; };
    {
      std::lock_guard<std::mutex> l(mu_);
      driver_ = std::make_unique<RunDriver>(run_, std::move(ctx));
    }
    driver_->start([this](const std::string& id) {
      workers_.release_run(id);
      ++exits_;
    });
  }

  // The run's record once it has finished.
  json wait() {
    auto f = finished_.get_future();
    if (f.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
      ADD_FAILURE() << "the run did not finish";
      stopping_ = true;
      return json::object();
    }
    json record = f.get();
    driver_->join();
    return record;
  }

  bool any_executor_busy() const {
    for (const auto& w : workers_.view())
      for (const auto& e : w.executors)
        if (e.busy) return true;
    return false;
  }

  std::vector<double> field(const std::string& name) {
    auto npy = book_.field_npy(run_->id, name);
    EXPECT_TRUE(npy.ok()) << npy.status().message();
    if (!npy.ok()) return {};
    const std::string& b = npy.value();
    const size_t header = b.size() - kRows * sizeof(double);
    std::vector<double> v(kRows);
    std::memcpy(v.data(), b.data() + header, kRows * sizeof(double));
    return v;
  }

  static std::vector<double> doubled_rows() {
    std::vector<double> v;
    for (int i = 1; i <= kRows; ++i) v.push_back(2.0 * i);
    return v;
  }

  static std::vector<int64_t> iterations_sent(const FakeWorker& w, const std::string& wire_id) {
    std::vector<int64_t> out;
    for (const auto& m : w.link()->sent_of(MessageType::kIterate))
      if (m.header["run_id"] == wire_id) out.push_back(m.header["iteration"].get<int64_t>());
    return out;
  }

  TempDir dir_;
  RunBook book_{dir_.path()};
  WorkerRegistry workers_;
  std::shared_ptr<ProgramEntry> program_;
  std::vector<std::unique_ptr<FakeWorker>> fakes_;
  std::mutex mu_;
  std::unique_ptr<RunDriver> driver_;
  std::shared_ptr<RunRecord> run_;
  std::promise<json> finished_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> scheduler_wakes_{0}, exits_{0};
  std::atomic<bool> busy_when_answered_{true};
  int worker_wait_s_ = 10;

  void TearDown() override {
    stopping_ = true;
    std::lock_guard<std::mutex> l(mu_);
    driver_.reset();
  }
};

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

TEST_F(RunDriverTest, ALostWorkerIsReplannedAndTheRunResumesAtTheInterruptedIteration) {
  use_program(kSums);
  FakeWorker& w1 = add_worker();
  FakeWorker& w2 = add_worker();
  w2.intercept = [&](const Message& m) {
    if (m.type != MessageType::kIterate || m.header["iteration"] != 1) return false;
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
    if (m.type != MessageType::kIterate || m.header["iteration"] != 2) return false;
    lose("w2");
    return true;
  };
  start();
  json r = wait();
  ASSERT_EQ(r["status"], "done") << r.dump(2);
  EXPECT_EQ(r["recoveries"][0]["resumed_at_iteration"], 0);
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
    if (m.type != MessageType::kIterate || m.header["iteration"] != 1) return false;
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
  EXPECT_NE(r["error"].get<std::string>().find("no worker has built program"), std::string::npos)
      << r["error"];
  EXPECT_TRUE(book_.pending().empty());
}

TEST_F(RunDriverTest, CancellingARunningRunEndsItOnItsWorkers) {
  use_program(kSums);
  FakeWorker& w1 = add_worker();
  w1.intercept = [](const Message& m) {
    return m.type == MessageType::kIterate && m.header["iteration"] == 1;  // never answers
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
  auto ends = w1.link()->sent_of(MessageType::kRunEnd);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_FALSE(RunEndMsg::parse(ends[0].header)->want_outputs);
  EXPECT_FALSE(any_executor_busy());
}

TEST_F(RunDriverTest, AWorkersErrorFailsTheRunWithItsMessage) {
  use_program(kSums);
  FakeWorker& w1 = add_worker();
  FakeWorker& w2 = add_worker();
  w2.intercept = [&](const Message& m) {
    if (m.type != MessageType::kIterate || m.header["iteration"] != 1) return false;
    std::lock_guard<std::mutex> l(mu_);
    IterationResultMsg bad{m.header["run_id"], 1, false, "CUDA error: out of memory", 0};
    driver_->deliver({DriverEvent::Kind::kMessage, "w2", bad.to_message(), {}});
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
    RunReadyMsg bad{m.header["run_id"], false, "this worker has not built program x", 0, false};
    driver_->deliver({DriverEvent::Kind::kMessage, "w1", bad.to_message(), {}});
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

TEST_F(RunDriverTest, RepliesOfAnEarlierAttemptAreIgnored) {
  use_program(kSums);
  FakeWorker& w1 = add_worker();
  FakeWorker& w2 = add_worker();
  w2.intercept = [&](const Message& m) {
    if (m.type != MessageType::kIterate || m.header["iteration"] != 1) return false;
    lose("w2");
    return true;
  };
  const std::string stale_id = "r1.0";
  w1.intercept = [&](const Message& m) {
    if (m.type == MessageType::kIterate && m.header["run_id"] == "r1.1") {
      // A late answer of the first attempt, with an aggregate that would fail the run.
      std::lock_guard<std::mutex> l(mu_);
      IterationResultMsg late{stale_id, m.header["iteration"], true, "", 0};
      driver_->deliver({DriverEvent::Kind::kMessage, "w1", late.to_message("xyz"), {}});
    }
    return false;
  };
  start();
  json r = wait();
  EXPECT_EQ(r["status"], "done") << r.dump(2);
  EXPECT_EQ(r["result"]["state"]["total"], 3 * 55.0);
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
