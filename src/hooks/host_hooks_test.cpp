#include "hooks/host_hooks.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

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
  auto started = hooks.start(m, *params, r.state, r.agg, {});
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

}  // namespace
}  // namespace lizard
