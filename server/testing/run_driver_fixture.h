// RunDriverTest: a RunBook, a WorkerRegistry with scripted fake workers and
// one RunDriver, for the run driver's tests (run_driver_test.cpp,
// run_driver_recovery_test.cpp).  The programs sum x over the rows; their
// host hook adds each iteration's sum to the state and never stops on its
// own, so a run makes max_iterations iterations and its result shows whether
// every row was counted once per iteration.
//
//   TEST_F(RunDriverTest, ...) { use_program(kSums); add_worker(); start(); json r = wait(); }
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <mutex>

#include "common/clock.h"
#include "server/run_driver.h"
#include "server/testing/fakes.h"

namespace lizard::testing {

using nlohmann::json;

// Sums x over the rows; the host hook adds each iteration's sum to the state
// and never stops on its own, so a run makes max_iterations iterations.
inline const char* kSums = R"(
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
inline const char* kSumsWithOutput = R"(
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
inline const char* kHost = R"(
#include "lizard_program.h"
extern "C" int update_global_state(const global_params_t*, const agg_res_t* r,
                                   global_state_t* s, int64_t iteration) {
  s->total += *r->sum;
  s->steps = iteration + 1;
  return 0;
}
)";

inline constexpr int kRows = 10;  // x = 1, 2, ..., 10: the sum is 55

inline std::vector<double> rows_of(const FakeRun& run, const std::string& field) {
  const std::string& bytes = run.rows.at(field);
  std::vector<double> v(bytes.size() / sizeof(double));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(double));
  return v;
}

// What a worker's kernels give: the sum of its x and its row count.
inline std::string sums_kernel(const Manifest& m, const FakeRun& run) {
  SectionBuffer agg = make_section(m.aggregate, m, ParamValues{}).value();
  double sum = 0;
  for (double x : rows_of(run, "x")) sum += x;
  const int64_t count = run.start.rows;
  std::memcpy(agg.data(*agg.find("sum")), &sum, sizeof sum);
  std::memcpy(agg.data(*agg.find("count")), &count, sizeof count);
  return std::string(agg.bytes.begin(), agg.bytes.end());
}

// A loop step as a worker that drives the run's loop sends it: the
// iteration's aggregate, then the state kHost's hook makes of it.
inline std::string sums_loop_step(const Manifest& m, const FakeRun& run, const std::string& state,
                                  int64_t it) {
  std::string agg = sums_kernel(m, run);
  SectionBuffer a = make_section(m.aggregate, m, ParamValues{}).value();
  SectionBuffer s = make_section(m.state, m, ParamValues{}).value();
  std::memcpy(a.bytes.data(), agg.data(), a.bytes.size());
  std::memcpy(s.bytes.data(), state.data(), s.bytes.size());
  double total, sum;
  std::memcpy(&total, s.data(*s.find("total")), sizeof total);
  std::memcpy(&sum, a.data(*a.find("sum")), sizeof sum);
  total += sum;
  const int64_t steps = it + 1;
  std::memcpy(s.data(*s.find("total")), &total, sizeof total);
  std::memcpy(s.data(*s.find("steps")), &steps, sizeof steps);
  return agg + std::string(s.bytes.begin(), s.bytes.end());
}

// y = 2x for the worker's rows.
inline std::string doubled(const FakeRun& run, const std::string&) {
  std::string out;
  for (double x : rows_of(run, "x")) {
    const double y = 2 * x;
    out.append(reinterpret_cast<const char*>(&y), sizeof y);
  }
  return out;
}

// A worker's message as the coordinator hands it to a driver: an
// iteration_result as the frame it came in, any other decoded.
inline DriverEvent from_worker(const std::string& id, Message m) {
  if (m.type == MessageType::kIterationResult) return DriverEvent::result(id, encode(m));
  return {DriverEvent::Kind::kMessage, id, std::move(m), {}};
}

// A RunBook, a WorkerRegistry with fake workers, and one RunDriver.
class RunDriverTest : public ::testing::Test {
 protected:
  void use_program(const char* config, const std::string& host = kHost) {
    program_ = make_test_program(config, host);
    ASSERT_NE(program_, nullptr);
  }

  FakeWorker& add_worker(size_t executors = 1, uint64_t free_bytes = 0) {
    const std::string id = "w" + std::to_string(fakes_.size() + 1);
    auto w = std::make_unique<FakeWorker>(id, [this](const std::string& from, Message m) {
      std::lock_guard<std::mutex> l(mu_);
      if (driver_) driver_->deliver(from_worker(from, std::move(m)));
    });
    const Manifest& m = program_->image.manifest;
    w->kernel = [&m](const FakeRun& run, const IterateMsg&) { return sums_kernel(m, run); };
    w->output = doubled;
    EXPECT_EQ(workers_.connect(w->link()), id);
    HelloMsg hello = w->hello(executors, free_bytes);
    hello.fold_port = fold_port_;
    EXPECT_TRUE(workers_.hello(id, std::move(hello), {}));
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
    ctx.worker_loop = worker_loop_;
    ctx.fold_fan_in = fold_fan_in_;
    ctx.hooks = hook_options_;
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
      if (auto it = IterateMsg::parse(m.packed); it.ok() && it->run_id == wire_id)
        out.push_back(it->iteration);
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
  bool worker_loop_ = true;
  int fold_port_ = 0;     // workers added from now on take fold links there (0: none)
  int fold_fan_in_ = 16;  // DriverContext::fold_fan_in
  HookProcessOptions hook_options_;

  void TearDown() override {
    stopping_ = true;
    std::lock_guard<std::mutex> l(mu_);
    driver_.reset();
  }
};

}  // namespace lizard::testing
