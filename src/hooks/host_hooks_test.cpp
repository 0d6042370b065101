#include "hooks/host_hooks.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "hooks/idle_hook_processes.h"
#include "program/bundle.h"

namespace lizard {
namespace {

namespace fs = std::filesystem;

// A program whose update_global_state adds the aggregate to the state, and
// at iteration 1 with mode 1 dereferences a null pointer.
ProgramImage counting_program() {
  ProgramBundle b;
  b.config = R"(info: {name: counting}
sources: {cuda: kernel.cu, host: host.cpp}
params: {mode: {type: int32}}
dataset: {x: {type: float32, shape: [rows]}}
state: {total: {type: float64}}
aggregate: {sum: {type: float64, reduce: sum}}
iterate: [k]
)";
  b.sources["kernel.cu"] = "";
  b.sources["host.cpp"] = R"(#include "lizard_program.h"
extern "C" int update_global_state(const global_params_t* p, const agg_res_t* r,
                                   global_state_t* s, int64_t it) {
  if (it == 1 && p->mode == 1) { volatile int* nowhere = 0; *nowhere = 1; }
  s->total += *r->sum;
  return 0;
}
)";
  auto image = make_program_image(b);
  EXPECT_TRUE(image.ok()) << image.status().message();
  return image.ok() ? *image : ProgramImage{};
}

std::shared_ptr<HostHooks> build(const ProgramImage& image) {
  static const HostCompiler compiler(
      (fs::temp_directory_path() / ("lizard-test-host-hooks-" + std::to_string(getuid())))
          .string());
  auto hooks = HostHooks::build(image, compiler);
  EXPECT_TRUE(hooks.ok()) << hooks.status().message();
  return hooks.ok() ? *hooks : nullptr;
}

// One run's hooks and sections.
struct HookedRun {
  SectionBuffer state, agg;
  std::unique_ptr<RunHooks> hooks;

  pid_t pid() const { return hooks && hooks->process() ? hooks->process()->pid() : -1; }
  // Calls update_global_state with an aggregate of `sum`; the state's total.
  Result<double> update(double sum, int64_t iteration) {
    std::memcpy(agg.data(*agg.find("sum")), &sum, sizeof sum);
    LIZARD_RETURN_IF_ERROR(hooks->update_state(agg, &state, iteration).status());
    double total = 0;
    std::memcpy(&total, state.data(*state.find("total")), sizeof total);
    return total;
  }
};

HookedRun start(const HostHooks& hooks, const ProgramImage& image, int mode) {
  const Manifest& m = image.manifest;
  auto params = bind_params(m, {{"mode", mode}});
  EXPECT_TRUE(params.ok());
  HookedRun r;
  r.state = make_section(m.state, m, *params).value();
  r.agg = make_section(m.aggregate, m, *params).value();
  auto started = hooks.start(m, *params, RunValues{}, r.state, r.agg, {});
  EXPECT_TRUE(started.ok()) << started.status().message();
  if (started.ok()) r.hooks = std::move(started).value();
  return r;
}

class HostHooksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    image_ = counting_program();
    hooks_ = build(image_);
    ASSERT_TRUE(hooks_);
  }
  ProgramImage image_;
  std::shared_ptr<HostHooks> hooks_;
};

TEST_F(HostHooksTest, BackToBackRunsUseTheProcessTheLastRunLeftIdle) {
  EXPECT_EQ(hooks_->idle_processes(), 1u);  // the one the library was checked in
  pid_t first;
  {
    HookedRun a = start(*hooks_, image_, 0);
    first = a.pid();
    ASSERT_GT(first, 0);
    EXPECT_EQ(hooks_->idle_processes(), 0u);
    EXPECT_EQ(a.update(2.5, 0).value(), 2.5);
    EXPECT_EQ(a.update(1.0, 1).value(), 3.5);
  }
  EXPECT_EQ(hooks_->idle_processes(), 1u);
  HookedRun b = start(*hooks_, image_, 0);
  EXPECT_EQ(b.pid(), first);
  // The next run starts from its own state, not the last run's.
  EXPECT_EQ(b.update(4.0, 0).value(), 4.0);
}

TEST_F(HostHooksTest, AProcessWhoseHookCrashedIsNeverReused) {
  pid_t crashed;
  {
    HookedRun a = start(*hooks_, image_, 1);
    crashed = a.pid();
    ASSERT_TRUE(a.update(1.0, 0).ok());
    auto r = a.update(1.0, 1);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("SIGSEGV"), std::string::npos) << r.status().message();
  }
  EXPECT_EQ(hooks_->idle_processes(), 0u);
  HookedRun b = start(*hooks_, image_, 0);
  EXPECT_NE(b.pid(), crashed);
  EXPECT_EQ(b.update(1.5, 1).value(), 1.5);
}

TEST_F(HostHooksTest, RunsAtTheSameTimeHaveProcessesOfTheirOwn) {
  {
    HookedRun a = start(*hooks_, image_, 0), b = start(*hooks_, image_, 0);
    EXPECT_NE(a.pid(), b.pid());
    EXPECT_EQ(a.update(1.0, 0).value(), 1.0);
    EXPECT_EQ(b.update(2.0, 0).value(), 2.0);
  }
  EXPECT_EQ(hooks_->idle_processes(), 2u);
}

TEST_F(HostHooksTest, AnIdleProcessThatDiedIsReplaced) {
  pid_t idle;
  {
    HookedRun a = start(*hooks_, image_, 0);
    idle = a.pid();
  }
  ASSERT_EQ(::kill(idle, SIGKILL), 0);
  HookedRun b = start(*hooks_, image_, 0);
  EXPECT_NE(b.pid(), idle);
  EXPECT_EQ(b.update(3.0, 0).value(), 3.0);
}

// Whether process `pid` is gone (reaped) within 2 s.
bool gone(pid_t pid) {
  for (int i = 0; i < 200; ++i) {
    if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// The pid of the process a run of `hooks` gets, which is idle again after.
pid_t idle_pid(const HostHooks& hooks, const ProgramImage& image) {
  HookedRun r = start(hooks, image, 0);
  return r.pid();
}

// Programs keep their idle processes in the daemon's pool: over its
// capacity the one idle longest ends, whichever program it served.
TEST(HostHooks, TheDaemonKeepsAtMostItsCapacityIdleTheLongestIdleEndingFirst) {
  IdleHookProcesses& pool = IdleHookProcesses::instance();
  const size_t capacity = pool.capacity();
  pool.set_capacity(2);
  const ProgramImage image = counting_program();
  std::shared_ptr<HostHooks> a = build(image);
  ASSERT_TRUE(a);
  const pid_t a_idle = idle_pid(*a, image);
  std::shared_ptr<HostHooks> b = build(image), c = build(image);
  ASSERT_TRUE(b && c);
  EXPECT_TRUE(gone(a_idle)) << "the longest idle process outlived the cap";
  EXPECT_EQ(a->idle_processes(), 0u);
  EXPECT_EQ(b->idle_processes(), 1u);
  EXPECT_EQ(c->idle_processes(), 1u);
  // A program whose process went starts a new one.
  HookedRun r = start(*a, image, 0);
  EXPECT_GT(r.pid(), 0);
  EXPECT_EQ(r.update(2.0, 0).value(), 2.0);
  pool.set_capacity(capacity);
}

// No program keeps more than four idle, however large the pool.
TEST(HostHooks, OneProgramKeepsAtMostFourIdle) {
  const ProgramImage image = counting_program();
  std::shared_ptr<HostHooks> hooks = build(image);
  ASSERT_TRUE(hooks);
  {
    std::vector<HookedRun> runs;
    for (int i = 0; i < 6; ++i) runs.push_back(start(*hooks, image, 0));
  }
  EXPECT_EQ(hooks->idle_processes(), IdleHookProcesses::kPerProgram);
}

// A program that goes ends the processes it kept idle.
TEST(HostHooks, AProgramThatGoesEndsItsIdleProcesses) {
  const ProgramImage image = counting_program();
  std::shared_ptr<HostHooks> hooks = build(image);
  ASSERT_TRUE(hooks);
  const pid_t idle = idle_pid(*hooks, image);
  ASSERT_GT(idle, 0);
  EXPECT_EQ(::kill(idle, 0), 0);
  hooks.reset();
  EXPECT_TRUE(gone(idle));
}

// Each hook reads the run's values and the iteration of its call in
// lizard_hook_context; a process kept idle gives the next run its own.
TEST(HostHooks, HooksReadTheRunsSeedAndTheIterationInTheirContext) {
  ProgramBundle b;
  b.config = R"(sources: {cuda: kernel.cu, host: host.cpp}
dataset: {x: {type: float32, shape: [rows]}}
state:
  seed: {type: uint64}
  gen_seed: {type: uint64}
  at_init: {type: int64}
  at_update: {type: int64}
aggregate: {at_aggregate: {type: int64, reduce: custom}}
iterate: [k]
)";
  b.sources["kernel.cu"] = "";
  b.sources["host.cpp"] = R"(#include "lizard_program.h"
extern "C" void init_global_state(const global_params_t*, global_state_t* s) {
  s->at_init = 100 + lizard_hook_context.iteration;
}
extern "C" void aggregate(const global_params_t*, agg_res_t* running, const agg_res_t*) {
  *running->at_aggregate = 1000 + lizard_hook_context.iteration;
}
extern "C" int update_global_state(const global_params_t*, const agg_res_t*, global_state_t* s,
                                   int64_t) {
  s->seed = lizard_hook_context.run_seed;
  s->gen_seed = lizard_hook_context.generate_seed;
  s->at_update = lizard_hook_context.iteration;
  return 0;
}
)";
  auto image = make_program_image(b);
  ASSERT_TRUE(image.ok()) << image.status().message();
  const Manifest& m = image->manifest;
  std::shared_ptr<HostHooks> hooks = build(*image);
  ASSERT_TRUE(hooks);
  ParamValues params;
  auto state = make_section(m.state, m, params).value();
  auto agg = make_section(m.aggregate, m, params).value();
  auto get = [](const SectionBuffer& s, const char* name) {
    int64_t v = 0;
    std::memcpy(&v, s.data(*s.find(name)), sizeof v);
    return v;
  };
  for (uint64_t run_seed : {0xfeedfacecafebeefull, 5ull}) {  // the second in the idle process
    RunValues values;
    values.generate_seed = 3;
    values.run_seed = run_seed;
    auto run = hooks->start(m, params, values, state, agg, {});
    ASSERT_TRUE(run.ok()) << run.status().message();
    ASSERT_TRUE((*run)->init_state(&state).value());
    EXPECT_EQ(get(state, "at_init"), 100);
    for (int64_t it = 0; it < 3; ++it) {
      SectionBuffer partial = agg;
      ASSERT_TRUE((*run)->aggregate(&agg, partial, it).ok());
      EXPECT_EQ(get(agg, "at_aggregate"), 1000 + it);
      ASSERT_TRUE((*run)->update_state(agg, &state, it).ok());
      EXPECT_EQ(static_cast<uint64_t>(get(state, "seed")), run_seed);
      EXPECT_EQ(get(state, "gen_seed"), 3);
      EXPECT_EQ(get(state, "at_update"), it);
    }
  }
  EXPECT_EQ(hooks->idle_processes(), 1u);
}

}  // namespace
}  // namespace lizard
