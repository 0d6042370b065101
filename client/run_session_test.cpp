#include "client/run_session.h"

#include <gtest/gtest.h>

#include <cstring>

#include "common/clock.h"
#include "program/bundle.h"

namespace lizard {
namespace {

using nlohmann::json;

const char* kConfig = R"(
sources: {cuda: kernel.cu}
dataset:
  x: {type: float64, shape: [rows]}
  y: {type: float64, shape: [rows], input: false, output: true}
state: {t: {type: float64}}
aggregate:
  sum:   {type: float64, reduce: sum}
  count: {type: int64, reduce: sum}
iterate: [k]
)";

std::shared_ptr<const ProgramImage> program() {
  ProgramBundle b;
  b.config = kConfig;
  b.sources["kernel.cu"] = "";
  auto img = make_program_image(b);
  EXPECT_TRUE(img.ok()) << img.status().message();
  return std::make_shared<ProgramImage>(std::move(img).value());
}

std::vector<double> as_doubles(const void* p, size_t bytes) {
  std::vector<double> v(bytes / sizeof(double));
  std::memcpy(v.data(), p, v.size() * sizeof(double));
  return v;
}

// An executor that keeps the x rows it is given, sums them (plus the state's
// t per row) into the aggregate and returns y = 2x.  Counts what it is asked.
class FakeExecutor : public Executor {
 public:
  explicit FakeExecutor(int ordinal) { info_.ordinal = ordinal; }
  const ExecutorInfo& info() const override { return info_; }
  Status build(const ProgramImage&) override { return Status::Ok(); }
  Status begin_run(const ProgramImage& p, const ParamValues&, PartitionData data) override {
    ++begun;
    if (!fail_begin.empty()) return runtime_error(fail_begin);
    manifest_ = p.manifest;
    first_row = data.first_row;
    x = as_doubles(data.fields[0].data(), data.fields[0].size());
    EXPECT_TRUE(data.fields[1].empty());  // input: false, allocated here
    return Status::Ok();
  }
  Status iterate(const SectionBuffer& state, SectionBuffer* agg, IterationStats* stats) override {
    return iterate_rows(state, agg, stats, 0, static_cast<int64_t>(x.size()));
  }
  Status iterate_rows(const SectionBuffer& state, SectionBuffer* agg, IterationStats* stats,
                      int64_t first, int64_t count) override {
    if (!fail_iterate.empty()) return runtime_error(fail_iterate);
    ++slices;
    double t = 0;
    std::memcpy(&t, state.data(*state.find("t")), sizeof t);
    double sum = 0;
    for (int64_t i = first; i < first + count; ++i) sum += x[static_cast<size_t>(i)] + t;
    std::memcpy(agg->data(*agg->find("sum")), &sum, sizeof sum);
    std::memcpy(agg->data(*agg->find("count")), &count, sizeof count);
    stats->kernel_ms = 1.0 + info_.ordinal;
    return Status::Ok();
  }
  Result<std::vector<std::vector<uint8_t>>> end_run(bool want_outputs) override {
    ++ended;
    ended_wanting += want_outputs;
    std::vector<std::vector<uint8_t>> out(2);
    if (want_outputs)
      for (double v : x) {
        const double y = 2 * v;
        const auto* b = reinterpret_cast<const uint8_t*>(&y);
        out[1].insert(out[1].end(), b, b + sizeof y);
      }
    return out;
  }
  CompileStats run_compile_stats() const override { return {4.0 + info_.ordinal, false}; }
  void refresh_free_memory() override {}

  std::atomic<int> begun{0}, ended{0}, ended_wanting{0}, slices{0};
  int64_t first_row = -1;
  std::vector<double> x;
  std::string fail_begin, fail_iterate;

 private:
  ExecutorInfo info_;
  Manifest manifest_;
};

// A worker's executors, the program it has built, and what its sessions send.
class RunSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    program_ = program();
    for (int i = 0; i < 2; ++i) {
      executors_.push_back(std::make_unique<ExecutorHandle>());
      executors_.back()->executor = std::make_unique<FakeExecutor>(i);
    }
  }

  FakeExecutor& exec(size_t i) { return static_cast<FakeExecutor&>(*executors_[i]->executor); }

  std::unique_ptr<RunSession> session(std::map<size_t, std::vector<uint8_t>> uploaded = {},
                                      OpenLoopHooks open_hooks = nullptr) {
    SessionContext ctx;
    ctx.open_hooks = std::move(open_hooks);
    ctx.executors = &executors_;
    ctx.send = [this](std::string frame) { replies_.push(std::move(frame)); };
    ctx.find_program = [this](const std::string& hash) -> std::shared_ptr<const ProgramImage> {
      return hash == program_->hash ? program_ : nullptr;
    };
    return std::make_unique<RunSession>(std::move(ctx), std::move(uploaded));
  }

  // x = 1..rows as inline rows, split over the given executors.
  std::string run_start(const std::string& run_id, int64_t rows, std::vector<PartSpec> parts = {},
                        bool progress = false) {
    if (parts.empty()) parts = {{0, 0, rows}};
    RunStartMsg s;
    s.run_id = run_id;
    s.hash = program_->hash;
    s.rows = rows;
    s.parts = parts;
    s.progress = progress;
    std::string payload;
    for (int64_t i = 1; i <= rows; ++i) {
      const double v = static_cast<double>(i);
      payload.append(reinterpret_cast<const char*>(&v), sizeof v);
    }
    s.fields = {{"x", "inline", 0, payload.size(), "", "", "", ""},
                {"y", "none", 0, 0, "", "", "", ""}};
    return encode(s.to_message(std::move(payload)));
  }

  std::string loop(const std::string& run_id, int64_t first, int64_t max, double t = 0) const {
    const Manifest& m = program_->manifest;
    SectionBuffer state = make_section(m.state, m, ParamValues{}).value();
    std::memcpy(state.data(*state.find("t")), &t, sizeof t);
    return encode(LoopMsg{run_id, first, max}.to_message(
        std::string(state.bytes.begin(), state.bytes.end())));
  }

  size_t aggregate_bytes() const {
    const Manifest& m = program_->manifest;
    return make_section(m.aggregate, m, ParamValues{}).value().bytes.size();
  }

  std::string iterate(const std::string& run_id, int64_t it, double t = 0) const {
    const Manifest& m = program_->manifest;
    SectionBuffer state = make_section(m.state, m, ParamValues{}).value();
    std::memcpy(state.data(*state.find("t")), &t, sizeof t);
    return encode(
        IterateMsg{run_id, it}.to_message(std::string(state.bytes.begin(), state.bytes.end())));
  }

  // The sum and count of an iteration result's (folded) aggregate.
  std::pair<double, int64_t> aggregate_of(const Message& m) const {
    const Manifest& man = program_->manifest;
    SectionBuffer agg = make_section(man.aggregate, man, ParamValues{}).value();
    EXPECT_EQ(m.payload.size(), agg.bytes.size());
    if (m.payload.size() != agg.bytes.size()) return {};
    std::memcpy(agg.bytes.data(), m.payload.data(), agg.bytes.size());
    double sum;
    int64_t count;
    std::memcpy(&sum, agg.data(*agg.find("sum")), sizeof sum);
    std::memcpy(&count, agg.data(*agg.find("count")), sizeof count);
    return {sum, count};
  }

  Message next_reply() {
    auto f = replies_.pop_for(std::chrono::seconds(10));
    EXPECT_TRUE(f.has_value()) << "no reply";
    if (!f) return {};
    return decode(*f).value();
  }

  std::string owner(size_t i) {
    std::lock_guard<std::mutex> l(executors_[i]->mu);
    return executors_[i]->owner;
  }

  std::shared_ptr<const ProgramImage> program_;
  std::vector<std::unique_ptr<ExecutorHandle>> executors_;
  Mailbox<std::string> replies_;
};

TEST_F(RunSessionTest, ARunLoadsItsRowsIteratesAndReturnsItsOutputs) {
  auto s = session();
  s->post(run_start("r1.0", 5, {{0, 0, 3}, {1, 3, 2}}));
  Message ready = next_reply();
  ASSERT_EQ(ready.type, MessageType::kRunReady);
  auto r = RunReadyMsg::parse(ready.header).value();
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.compile_ms, 5.0);  // the slowest executor's
  EXPECT_FALSE(r.compile_cache_hit);
  EXPECT_EQ(exec(0).x, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(exec(1).x, (std::vector<double>{4, 5}));
  EXPECT_EQ(exec(1).first_row, 3);
  EXPECT_EQ(owner(0), "r1.0");
  EXPECT_EQ(owner(1), "r1.0");

  s->post(iterate("r1.0", 0, 0.5));
  Message result = next_reply();
  ASSERT_EQ(result.type, MessageType::kIterationResult);
  auto ir = IterationResultMsg::parse(result.header).value();
  EXPECT_TRUE(ir.ok) << ir.error;
  EXPECT_EQ(ir.iteration, 0);
  EXPECT_EQ(ir.kernel_ms, 2.0);
  // Built-in reducers: the executors' aggregates come folded into one.
  EXPECT_EQ(aggregate_of(result), (std::pair<double, int64_t>{15 + 5 * 0.5, 5}));

  s->post(encode(RunEndMsg{"r1.0", true, {"y"}}.to_message()));
  Message outs = next_reply();
  ASSERT_EQ(outs.type, MessageType::kRunOutputs);
  auto o = RunOutputsMsg::parse(outs.header).value();
  EXPECT_TRUE(o.ok) << o.error;
  ASSERT_EQ(o.fields.size(), 1u);
  EXPECT_EQ(o.fields[0].name, "y");
  EXPECT_EQ(o.fields[0].bytes, 5 * sizeof(double));
  EXPECT_EQ(as_doubles(outs.payload.data(), outs.payload.size()),
            (std::vector<double>{2, 4, 6, 8, 10}));
  const auto deadline = SteadyClock::now() + std::chrono::seconds(10);
  while (!s->finished() && SteadyClock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(s->finished());
  EXPECT_EQ(owner(0), "");
  EXPECT_EQ(exec(0).ended, 1);
  EXPECT_EQ(exec(0).ended_wanting, 1);
}

TEST_F(RunSessionTest, ARunEndWithoutOutputsIsNotAnswered) {
  auto s = session();
  s->post(run_start("r1.0", 2));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  s->post(encode(RunEndMsg{"r1.0", false, {}}.to_message()));
  EXPECT_FALSE(replies_.pop_for(std::chrono::milliseconds(100)).has_value());
  EXPECT_EQ(exec(0).ended, 1);
  EXPECT_EQ(exec(0).ended_wanting, 0);
  EXPECT_EQ(owner(0), "");
}

TEST_F(RunSessionTest, LongIterationsReportProgressPerSlice) {
  auto s = session();
  s->post(run_start("r2.0", 3 * 4096, {}, /*progress=*/true));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  s->post(iterate("r2.0", 4));
  std::vector<int64_t> done;
  Message m = next_reply();
  while (m.type == MessageType::kProgress) {
    auto p = ProgressMsg::parse(m.header).value();
    EXPECT_EQ(p.run_id, "r2.0");
    EXPECT_EQ(p.iteration, 4);
    EXPECT_EQ(p.executor, 0);
    done.push_back(p.rows_done);
    m = next_reply();
  }
  EXPECT_EQ(done, (std::vector<int64_t>{4096, 8192, 12288}));
  ASSERT_EQ(m.type, MessageType::kIterationResult);
  const double n = 3 * 4096;
  EXPECT_EQ(aggregate_of(m), (std::pair<double, int64_t>{n * (n + 1) / 2, 3 * 4096}));
  EXPECT_EQ(exec(0).slices, 3);
}

TEST_F(RunSessionTest, UploadedRowsAreTakenFromTheChunksThatCameFirst) {
  std::vector<uint8_t> rows;
  for (double v : {7.0, 8.0, 9.0}) {
    const auto* b = reinterpret_cast<const uint8_t*>(&v);
    rows.insert(rows.end(), b, b + 8);
  }
  auto s = session({{0, rows}});
  RunStartMsg start;
  start.run_id = "r3.0";
  start.hash = program_->hash;
  start.rows = 3;
  start.parts = {{1, 0, 3}};
  start.fields = {{"x", "chunks", 0, 0, "", "", "", ""}, {"y", "none", 0, 0, "", "", "", ""}};
  s->post(encode(start.to_message()));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  EXPECT_EQ(exec(1).x, (std::vector<double>{7, 8, 9}));
  EXPECT_EQ(exec(0).begun, 0);
}

std::string ready_error(const Message& m) {
  auto r = RunReadyMsg::parse(m.header).value();
  EXPECT_FALSE(r.ok);
  return r.error;
}

TEST_F(RunSessionTest, BadRunStartsAreAnsweredWithTheReason) {
  {
    auto s = session();
    RunStartMsg start;
    start.run_id = "r4.0";
    start.hash = "unknown";
    s->post(encode(start.to_message()));
    EXPECT_EQ(ready_error(next_reply()), "this worker has not built program unknown");
  }
  {
    auto s = session();
    s->post(run_start("r5.0", 2, {{7, 0, 2}}));
    EXPECT_EQ(ready_error(next_reply()), "run_start names executor 7");
  }
  {
    auto s = session();
    RunStartMsg start = RunStartMsg::parse(decode(run_start("r6.0", 4)).value().header).value();
    s->post(encode(start.to_message("short")));
    EXPECT_EQ(ready_error(next_reply()), "run_start: inline rows exceed the payload");
  }
  EXPECT_EQ(owner(0), "");
  EXPECT_EQ(exec(0).begun, 0);
}

TEST_F(RunSessionTest, AnExecutorThatCannotBeginFailsTheRunAndIsLetGo) {
  exec(1).fail_begin = "out of device memory";
  auto s = session();
  s->post(run_start("r7.0", 4, {{0, 0, 2}, {1, 2, 2}}));
  EXPECT_EQ(ready_error(next_reply()), "out of device memory");
  EXPECT_EQ(owner(0), "");
  EXPECT_EQ(owner(1), "");
  EXPECT_EQ(exec(0).ended, 1);  // what did begin is freed
}

TEST_F(RunSessionTest, IterationErrorsAreAnswered) {
  auto s = session();
  s->post(run_start("r8.0", 2));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  s->post(iterate("r9.0", 0));
  auto other = IterationResultMsg::parse(next_reply().header).value();
  EXPECT_FALSE(other.ok);
  EXPECT_EQ(other.error, "no such run on this worker");
  s->post(encode(IterateMsg{"r8.0", 1}.to_message("abc")));
  auto wrong = IterationResultMsg::parse(next_reply().header).value();
  EXPECT_FALSE(wrong.ok);
  EXPECT_EQ(wrong.error.rfind("state of 3 bytes; expected ", 0), 0u) << wrong.error;
  exec(0).fail_iterate = "illegal memory access";
  s->post(iterate("r8.0", 2));
  Message failed = next_reply();
  auto f = IterationResultMsg::parse(failed.header).value();
  EXPECT_FALSE(f.ok);
  EXPECT_EQ(f.iteration, 2);
  EXPECT_EQ(f.error, "illegal memory access");
  EXPECT_TRUE(failed.payload.empty());
}

TEST_F(RunSessionTest, ARunWaitsForItsExecutorUntilThePreviousRunLetsItGo) {
  auto first = session();
  first->post(run_start("r1.0", 2));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  auto second = session();
  second->post(run_start("r2.0", 3));
  EXPECT_FALSE(replies_.pop_for(std::chrono::milliseconds(100)).has_value());
  EXPECT_EQ(owner(0), "r1.0");
  first->post(encode(RunEndMsg{"r1.0", false, {}}.to_message()));
  Message ready = next_reply();
  auto r = RunReadyMsg::parse(ready.header).value();
  EXPECT_EQ(r.run_id, "r2.0");
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(owner(0), "r2.0");
  EXPECT_EQ(exec(0).x, (std::vector<double>{1, 2, 3}));
}

TEST_F(RunSessionTest, AbortingAWaitingRunLeavesTheHolderAlone) {
  auto first = session();
  first->post(run_start("r1.0", 2));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  auto second = session();
  second->post(run_start("r2.0", 3));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  second->abort();
  second.reset();  // joins its thread: it stopped waiting
  EXPECT_EQ(owner(0), "r1.0");
  first->post(iterate("r1.0", 0));
  Message m = next_reply();  // the aborted run answered nothing
  ASSERT_EQ(m.type, MessageType::kIterationResult);
  EXPECT_TRUE(IterationResultMsg::parse(m.header)->ok);
}

// ---- loops driven by the worker ------------------------------------------

// An update hook that adds 1 to t and says done after iteration `last`.
class CountingHooks : public LoopHooks {
 public:
  CountingHooks(int64_t last, std::string fail = "", int sleep_ms = 0)
      : last_(last), fail_(std::move(fail)), sleep_ms_(sleep_ms) {}
  Result<bool> update(SectionBuffer*, SectionBuffer* state, int64_t it) override {
    if (!fail_.empty()) return runtime_error(fail_);
    std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms_));
    double t;
    std::memcpy(&t, state->data(*state->find("t")), sizeof t);
    t += 1;
    std::memcpy(state->data(*state->find("t")), &t, sizeof t);
    return it >= last_;
  }

 private:
  int64_t last_;
  std::string fail_;
  int sleep_ms_;
};

OpenLoopHooks hooks_of(int64_t last, std::string fail = "", int sleep_ms = 0) {
  return [=](const ProgramImage&, const ParamValues&,
             std::function<Status()>) -> Result<std::unique_ptr<LoopHooks>> {
    return std::unique_ptr<LoopHooks>(std::make_unique<CountingHooks>(last, fail, sleep_ms));
  };
}

TEST_F(RunSessionTest, ALoopRunsItsIterationsHereAndReportsEach) {
  auto s = session({}, hooks_of(/*last=*/3));
  s->post(run_start("r1.0", 5, {{0, 0, 3}, {1, 3, 2}}));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  s->post(loop("r1.0", 1, 10, 0.5));
  double t = 0.5;
  for (int64_t it = 1; it <= 3; ++it) {
    Message step = next_reply();
    ASSERT_EQ(step.type, MessageType::kLoopStep);
    auto h = LoopStepMsg::parse(step.header).value();
    ASSERT_TRUE(h.ok) << h.error;
    EXPECT_EQ(h.iteration, it);
    EXPECT_EQ(h.kernel_ms, 2.0);
    EXPECT_EQ(h.last, it == 3);
    // The aggregate both executors folded with the state of the iteration,
    // then the state the hook left.
    const size_t agg_bytes = aggregate_bytes();
    Message agg_only{step.type, step.header, step.payload.substr(0, agg_bytes)};
    EXPECT_EQ(aggregate_of(agg_only), (std::pair<double, int64_t>{15 + 5 * t, 5}));
    t += 1;
    EXPECT_EQ(as_doubles(step.payload.data() + agg_bytes, sizeof(double))[0], t);
  }
  EXPECT_FALSE(replies_.pop_for(std::chrono::milliseconds(100)).has_value());
  s->post(encode(RunEndMsg{"r1.0", false, {}}.to_message()));
}

TEST_F(RunSessionTest, ALoopStopsAtMaxIterationsAndWithoutHooksAfterOne) {
  auto s = session({}, hooks_of(/*last=*/100));
  s->post(run_start("r1.0", 2));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  s->post(loop("r1.0", 0, 2));
  EXPECT_FALSE(LoopStepMsg::parse(next_reply().header)->last);
  EXPECT_TRUE(LoopStepMsg::parse(next_reply().header)->last);

  auto plain = session({}, [](const ProgramImage&, const ParamValues&, std::function<Status()>) {
    return Result<std::unique_ptr<LoopHooks>>(std::unique_ptr<LoopHooks>());
  });
  plain->post(run_start("r2.0", 2, {{1, 0, 2}}));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  plain->post(loop("r2.0", 0, 50));
  auto only = LoopStepMsg::parse(next_reply().header).value();
  EXPECT_EQ(only.iteration, 0);
  EXPECT_TRUE(only.last);
}

TEST_F(RunSessionTest, AWorkerThatCannotRunTheHooksSaysSoBeforeAnyIteration) {
  auto s = session({}, [](const ProgramImage&, const ParamValues&, std::function<Status()>) {
    return Result<std::unique_ptr<LoopHooks>>(unavailable("no compiler for host.cpp"));
  });
  s->post(run_start("r1.0", 2));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  s->post(loop("r1.0", 0, 5));
  auto h = LoopStepMsg::parse(next_reply().header).value();
  EXPECT_FALSE(h.ok);
  EXPECT_TRUE(h.unsupported);
  EXPECT_EQ(exec(0).slices, 0);
  s->post(iterate("r1.0", 0));  // the server drives it instead
  EXPECT_TRUE(IterationResultMsg::parse(next_reply().header)->ok);
}

TEST_F(RunSessionTest, AHookErrorFailsTheLoopWithItsMessage) {
  auto s = session({}, hooks_of(5, "update_global_state crashed"));
  s->post(run_start("r1.0", 2));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  s->post(loop("r1.0", 0, 5));
  auto h = LoopStepMsg::parse(next_reply().header).value();
  EXPECT_FALSE(h.ok);
  EXPECT_FALSE(h.unsupported);
  EXPECT_NE(h.error.find("update_global_state crashed"), std::string::npos) << h.error;
}

TEST_F(RunSessionTest, ARunEndDuringALoopEndsItBeforeTheNextIteration) {
  auto s = session({}, hooks_of(/*last=*/1000000, "", /*sleep_ms=*/5));
  s->post(run_start("r1.0", 2));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  s->post(loop("r1.0", 0, 1000000));
  ASSERT_EQ(next_reply().type, MessageType::kLoopStep);
  s->post(encode(RunEndMsg{"r1.0", false, {}}.to_message()));
  const auto deadline = SteadyClock::now() + std::chrono::seconds(10);
  while (!s->finished() && SteadyClock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(s->finished());
  EXPECT_EQ(exec(0).ended, 1);
  EXPECT_EQ(owner(0), "");
}

}  // namespace
}  // namespace lizard
