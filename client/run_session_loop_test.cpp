// The loop a worker drives for a run placed on it alone: iterations here,
// folded into the reducers' identity, the update hook called after each, and
// every iteration reported; a run_end or a hook error ends it.
#include "client/run_session.h"

#include <gtest/gtest.h>

#include <cstring>
#include <future>

#include "client/testing/run_session_fixture.h"
#include "common/clock.h"
#include "hooks/iteration_step.h"
#include "tests/allocations.h"

namespace lizard {
namespace {

using nlohmann::json;
using testing::as_doubles;
using testing::FakeExecutor;
using testing::RunSessionTest;

// An update hook that adds 1 to t and says done after iteration `last`.
class CountingHooks : public LoopHooks {
 public:
  CountingHooks(int64_t last, std::string fail = "", int sleep_ms = 0)
      : last_(last), fail_(std::move(fail)), sleep_ms_(sleep_ms) {}
  Status aggregate(SectionBuffer*, const SectionBuffer&, int64_t) override {
    return internal_error("no custom reducer");
  }
  Result<bool> update_state(const SectionBuffer&, SectionBuffer* state, int64_t it) override {
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
  return [=](const ProgramImage&, const ParamValues&, const RunValues&,
             LoopHookLimits) -> Result<std::unique_ptr<LoopHooks>> {
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
    auto h = LoopStepMsg::parse(step.packed).value();
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
  // Both executors ran the loop's iterations, as the kernels count them.
  EXPECT_EQ(exec(0).iterations, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(exec(1).iterations, (std::vector<int64_t>{1, 2, 3}));
  s->post(encode(RunEndMsg{"r1.0", false, {}}.to_message()));
}

// Each step of a loop says whether some executor ran it on a quick build.
TEST_F(RunSessionTest, ALoopStepSaysWhetherAnExecutorRanItOnAQuickBuild) {
  exec(1).quick_until = 3;
  auto s = session({}, hooks_of(/*last=*/4));
  s->post(run_start("r1.0", 5, {{0, 0, 3}, {1, 3, 2}}));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  s->post(loop("r1.0", 1, 10, 0.5));
  std::vector<bool> quick;
  for (int64_t it = 1; it <= 4; ++it) {
    auto h = LoopStepMsg::parse(next_reply().packed).value();
    ASSERT_TRUE(h.ok) << h.error;
    quick.push_back(h.quick_build);
  }
  EXPECT_EQ(quick, (std::vector<bool>{true, true, false, false}));
  s->post(encode(RunEndMsg{"r1.0", false, {}}.to_message()));
}

// The loop's hooks are opened with the run's values: the hook context's seed.
TEST_F(RunSessionTest, ALoopOpensItsHooksWithTheRunsValues) {
  std::promise<uint64_t> seed;
  auto s = session({},
                   [&](const ProgramImage&, const ParamValues&, const RunValues& values,
                       LoopHookLimits) -> Result<std::unique_ptr<LoopHooks>> {
                     seed.set_value(values.run_seed);
                     return std::unique_ptr<LoopHooks>(std::make_unique<CountingHooks>(0));
                   });
  s->post(run_start("r1.0", 2, {}, false, /*run_seed=*/0xabcdef0123456789ull));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  s->post(loop("r1.0", 0, 5));
  EXPECT_TRUE(LoopStepMsg::parse(next_reply().packed)->last);
  EXPECT_EQ(seed.get_future().get(), 0xabcdef0123456789ull);
  s->post(encode(RunEndMsg{"r1.0", false, {}}.to_message()));
}

// fold_ms counts what the server's own loop counts as the fold: folding the
// executors' aggregates and the update hook (here a hook of 20 ms).
// The loop a worker drives and the server's loop over iterations the worker
// is sent are one sequence: each loop step carries, bit for bit, the
// aggregate and the state that the server's IterationStep makes of the
// iteration results for the same iterations.
TEST_F(RunSessionTest, ALoopStepIsWhatTheServerMakesOfTheSameIterations) {
  const Manifest& m = program_->manifest;
  CountingHooks server_hooks(/*last=*/100);
  IterationStep server_step = IterationStep::make(m, ParamValues{}, &server_hooks, 3).value();
  SectionBuffer agg = make_section(m.aggregate, m, ParamValues{}).value();
  SectionBuffer state = make_section(m.state, m, ParamValues{}).value();
  double t = 0.25;
  std::memcpy(state.data(*state.find("t")), &t, sizeof t);

  auto looping = session({}, hooks_of(/*last=*/100));
  looping->post(run_start("r1.0", 5, {{0, 0, 3}, {1, 3, 2}}));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  looping->post(loop("r1.0", 0, 3, t));
  std::vector<Message> steps;
  for (int it = 0; it < 3; ++it) steps.push_back(next_reply());
  looping->post(encode(RunEndMsg{"r1.0", false, {}}.to_message()));  // frees the executors

  auto sent = session();
  sent->post(run_start("r2.0", 5, {{0, 0, 3}, {1, 3, 2}}));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  for (int64_t it = 0; it < 3; ++it) {
    std::memcpy(&t, state.data(*state.find("t")), sizeof t);
    sent->post(iterate("r2.0", it, t));
    Message result = next_reply();
    ASSERT_EQ(result.type, MessageType::kIterationResult);
    server_step.start(&agg);
    ASSERT_TRUE(server_step.fold_packed(&agg, result.payload, it).ok());
    const bool stop = server_step.finish(agg, &state, it).value();

    auto h = LoopStepMsg::parse(steps[it].packed).value();
    ASSERT_TRUE(h.ok) << h.error;
    EXPECT_EQ(h.iteration, it);
    EXPECT_EQ(h.last, stop);
    const std::string expected = std::string(agg.bytes.begin(), agg.bytes.end()) +
                                 std::string(state.bytes.begin(), state.bytes.end());
    EXPECT_EQ(steps[it].payload, expected) << "iteration " << it;
  }
  EXPECT_TRUE(LoopStepMsg::parse(steps[2].packed)->last);  // the cap
  sent->post(encode(RunEndMsg{"r2.0", false, {}}.to_message()));
}

TEST_F(RunSessionTest, ALoopReportsItsFoldTimeWithTheUpdateHook) {
  auto s = session({}, hooks_of(/*last=*/2, "", /*sleep_ms=*/20));
  s->post(run_start("r1.0", 5, {{0, 0, 3}, {1, 3, 2}}));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  s->post(loop("r1.0", 1, 10, 0.5));
  for (int64_t it = 1; it <= 2; ++it) {
    auto h = LoopStepMsg::parse(next_reply().packed).value();
    ASSERT_TRUE(h.ok) << h.error;
    EXPECT_GE(h.fold_ms, 20.0);
    EXPECT_LE(h.fold_ms, h.ms);
  }
  s->post(encode(RunEndMsg{"r1.0", false, {}}.to_message()));
}

TEST_F(RunSessionTest, ALoopStopsAtMaxIterationsAndWithoutHooksAfterOne) {
  auto s = session({}, hooks_of(/*last=*/100));
  s->post(run_start("r1.0", 2));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  s->post(loop("r1.0", 0, 2));
  EXPECT_FALSE(LoopStepMsg::parse(next_reply().packed)->last);
  EXPECT_TRUE(LoopStepMsg::parse(next_reply().packed)->last);

  auto plain =
      session({}, [](const ProgramImage&, const ParamValues&, const RunValues&, LoopHookLimits) {
        return Result<std::unique_ptr<LoopHooks>>(std::unique_ptr<LoopHooks>());
      });
  plain->post(run_start("r2.0", 2, {{1, 0, 2}}));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  plain->post(loop("r2.0", 0, 50));
  auto only = LoopStepMsg::parse(next_reply().packed).value();
  EXPECT_EQ(only.iteration, 0);
  EXPECT_TRUE(only.last);
}

TEST_F(RunSessionTest, AWorkerThatCannotRunTheHooksSaysSoBeforeAnyIteration) {
  auto s =
      session({}, [](const ProgramImage&, const ParamValues&, const RunValues&, LoopHookLimits) {
        return Result<std::unique_ptr<LoopHooks>>(unavailable("no compiler for host.cpp"));
      });
  s->post(run_start("r1.0", 2));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  s->post(loop("r1.0", 0, 5));
  auto h = LoopStepMsg::parse(next_reply().packed).value();
  EXPECT_FALSE(h.ok);
  EXPECT_TRUE(h.unsupported);
  EXPECT_EQ(exec(0).slices, 0);
  s->post(iterate("r1.0", 0));  // the server drives it instead
  EXPECT_TRUE(IterationResultMsg::parse(next_reply().packed)->ok);
}

TEST_F(RunSessionTest, AHookErrorFailsTheLoopWithItsMessage) {
  auto s = session({}, hooks_of(5, "update_global_state crashed"));
  s->post(run_start("r1.0", 2));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  s->post(loop("r1.0", 0, 5));
  auto h = LoopStepMsg::parse(next_reply().packed).value();
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

// A loop's iterations, once their buffers have grown, allocate nothing in
// the worker: the executors' and hook's calls, the fold, and the step sent,
// whose buffer comes back to the session's pool as the connection gives it
// back once written.
TEST_F(RunSessionTest, ALoopIterationAllocatesNothingOnceItsBuffersHaveGrown) {
  constexpr int kIterations = 60;
  std::vector<uint64_t> at_step;  // the process's allocations when each step was sent
  at_step.reserve(kIterations);
  LoopStepMsg step;  // each step read into it, as the server would
  std::atomic<int> steps{0}, failed{0};
  SessionContext ctx = context(hooks_of(/*last=*/kIterations - 1));
  ctx.frames = std::make_shared<FramePool>();
  ctx.send = [&, pool = ctx.frames](OutgoingFrame sent) {
    std::string frame = testing::whole(std::move(sent));
    if (frame_type(frame).value() != MessageType::kLoopStep) return replies_.push(std::move(frame));
    at_step.push_back(testing::allocations());
    if (!step.read(decode_view(frame)->packed).ok() || !step.ok) ++failed;
    pool->give(std::move(frame));
    ++steps;
  };
  RunSession s(std::move(ctx), {});
  s.post(run_start("r1.0", 5, {{0, 0, 3}, {1, 3, 2}}));
  ASSERT_TRUE(RunReadyMsg::parse(next_reply().header)->ok);
  s.post(loop("r1.0", 0, kIterations + 10));
  const auto deadline = SteadyClock::now() + std::chrono::seconds(20);
  while (steps < kIterations && SteadyClock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(steps, kIterations);
  EXPECT_EQ(failed, 0);
  EXPECT_TRUE(step.last);
  EXPECT_EQ(at_step.back() - at_step[4], 0u) << "allocations in iterations 5.." << kIterations - 1;
  s.post(encode(RunEndMsg{"r1.0", false, {}}.to_message()));
}

}  // namespace
}  // namespace lizard
