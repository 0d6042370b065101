#include "hooks/hook_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "common/frame_mailbox.h"
#include "common/shared_library.h"
#include "exec/host_compiler.h"
#include "program/bundle.h"
#include "tests/allocations.h"

namespace lizard {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A program's image and its host.cpp compiled as the server compiles it.
struct CompiledHooks {
  ProgramImage image;
  std::string library;
};

CompiledHooks compile(const ProgramBundle& b) {
  static const HostCompiler compiler(
      (fs::temp_directory_path() / ("lizard-test-hooks-" + std::to_string(getuid()))).string());
  CompiledHooks out;
  auto image = make_program_image(b);
  EXPECT_TRUE(image.ok()) << image.status().message();
  if (!image.ok()) return out;
  out.image = *image;
  auto files = out.image.sources;
  files["lizard_program.h"] = out.image.header;
  auto so = compiler.build_shared(files, {"host.cpp"}, {"-O2", "-fvisibility=default"});
  EXPECT_TRUE(so.ok()) << so.status().message();
  if (so.ok()) out.library = *so;
  return out;
}

CompiledHooks compile_example(const std::string& name) {
  auto b = read_program_dir(std::string(LIZARD_SOURCE_DIR) + "/examples/" + name);
  EXPECT_TRUE(b.ok()) << b.status().message();
  return compile(b.ok() ? *b : ProgramBundle{});
}

// A program whose update_global_state adds the aggregate to the state and,
// at iteration 1, does what its `mode` param says: 1 a null dereference,
// 2 abort(), 3 exit(0), 4 an endless loop.
CompiledHooks faulty_program(const std::string& static_init = "") {
  ProgramBundle b;
  b.config = R"(info: {name: faults}
sources: {cuda: kernel.cu, host: host.cpp}
params: {mode: {type: int32}}
dataset: {x: {type: float32, shape: [rows]}}
state: {total: {type: float64}, seen: {type: int64, shape: [3]}}
aggregate: {sum: {type: float64, reduce: sum}}
iterate: [k]
)";
  b.sources["kernel.cu"] = "";
  b.sources["host.cpp"] = R"(#include <stdlib.h>
#include "lizard_program.h"
)" + static_init + R"(
extern "C" int update_global_state(const global_params_t* p, const agg_res_t* r,
                                   global_state_t* s, int64_t it) {
  if (it == 1) {
    if (p->mode == 1) { volatile int* nowhere = 0; *nowhere = 1; }
    if (p->mode == 2) abort();
    if (p->mode == 3) exit(0);
    if (p->mode == 4) for (volatile long spin = 0;; spin = spin + 1) {}
  }
  s->total += *r->sum;
  s->seen[it % 3] += 1;
  return it >= 5;
}
)";
  return compile(b);
}

ParamValues params_of(const Manifest& m, const nlohmann::json& j) {
  auto p = bind_params(m, j);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? *p : ParamValues{};
}

struct HookRun {
  SectionBuffer state, agg;
  std::unique_ptr<HookProcess> hooks;
};

HookRun start_run(const CompiledHooks& c, const ParamValues& p, HookProcessOptions opts = {}) {
  HookRun r;
  const Manifest& m = c.image.manifest;
  r.state = make_section(m.state, m, p).value();
  r.agg = make_section(m.aggregate, m, p).value();
  auto hp = HookProcess::start(c.library, "host.cpp", std::move(opts));
  EXPECT_TRUE(hp.ok()) << hp.status().message();
  if (!hp.ok()) return r;
  r.hooks = std::move(hp).value();
  Status st = r.hooks->setup(m, p, RunValues{}, r.state, r.agg);
  EXPECT_TRUE(st.ok()) << st.message();
  return r;
}

void set_sum(SectionBuffer* agg, double v) {
  std::memcpy(agg->data(*agg->find("sum")), &v, sizeof v);
}

double total_of(const SectionBuffer& state) {
  double v = 0;
  std::memcpy(&v, state.data(*state.find("total")), sizeof v);
  return v;
}

bool process_gone(pid_t pid) {
  return ::kill(pid, 0) != 0;
}

void fill_random(SectionBuffer* s, std::mt19937* rng) {
  std::uniform_real_distribution<float> d(-5, 5);
  for (size_t i = 0; i + sizeof(float) <= s->bytes.size(); i += sizeof(float)) {
    float f = d(*rng);
    std::memcpy(s->bytes.data() + i, &f, sizeof f);
  }
}

TEST(HookProcess, SaysWhichHooksTheLibraryDefines) {
  auto kmeans = compile_example("kmeans");
  auto hp = HookProcess::start(kmeans.library, "host.cpp", {});
  ASSERT_TRUE(hp.ok()) << hp.status().message();
  EXPECT_TRUE((*hp)->hooks().update);
  EXPECT_FALSE((*hp)->hooks().init);
  EXPECT_FALSE((*hp)->hooks().aggregate);
  auto anneal = compile_example("anneal");
  auto all = HookProcess::start(anneal.library, "host.cpp", {});
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_TRUE((*all)->hooks().init && (*all)->hooks().aggregate && (*all)->hooks().update);
}

// A program whose hooks print: its static initialiser, and update_global_state
// on stdout and stderr at each iteration; at iteration 2 it flushes and aborts.
CompiledHooks printing_program() {
  ProgramBundle b;
  b.config = R"(info: {name: printing}
sources: {cuda: kernel.cu, host: host.cpp}
params: {mode: {type: int32}}
dataset: {x: {type: float32, shape: [rows]}}
state: {total: {type: float64}}
aggregate: {sum: {type: float64, reduce: sum}}
iterate: [k]
)";
  b.sources["kernel.cu"] = "";
  b.sources["host.cpp"] = R"(#include <stdio.h>
#include <stdlib.h>
#include "lizard_program.h"
static int loaded = printf("loaded\n");
extern "C" int update_global_state(const global_params_t*, const agg_res_t*, global_state_t*,
                                   int64_t it) {
  printf("update %lld\n", (long long)it);
  fprintf(stderr, "to stderr\n");
  if (it == 2) { fflush(stdout); abort(); }
  return 0;
}
)";
  return compile(b);
}

// What the hooks print goes to options.output after each call, with the
// call's iteration (-1 for the loading); a hook that crashes leaves what it
// flushed before.
TEST(HookProcess, WhatTheHooksPrintGoesToTheOutputWithTheIteration) {
  auto c = printing_program();
  std::vector<std::pair<int64_t, std::string>> printed;
  HookProcessOptions opts;
  opts.output = [&](int64_t it, const OutputPipe::Taken& t) { printed.emplace_back(it, t.bytes); };
  HookRun r = start_run(c, params_of(c.image.manifest, {{"mode", 0}}), std::move(opts));
  ASSERT_TRUE(r.hooks);
  ASSERT_FALSE(printed.empty());
  EXPECT_EQ(printed[0], (std::pair<int64_t, std::string>{-1, "loaded\n"}));
  printed.clear();
  for (int64_t it = 0; it < 2; ++it) ASSERT_TRUE(r.hooks->update_state(r.agg, &r.state, it).ok());
  ASSERT_EQ(printed.size(), 2u);
  for (int64_t it = 0; it < 2; ++it) {
    EXPECT_EQ(printed[it].first, it);
    EXPECT_NE(printed[it].second.find("update " + std::to_string(it) + "\n"), std::string::npos);
    EXPECT_NE(printed[it].second.find("to stderr\n"), std::string::npos);
  }
  printed.clear();
  EXPECT_FALSE(r.hooks->update_state(r.agg, &r.state, 2).ok());
  ASSERT_EQ(printed.size(), 1u);
  EXPECT_EQ(printed[0].first, 2);
  EXPECT_NE(printed[0].second.find("update 2\n"), std::string::npos);
}

// The hook process maps its channel's mailboxes (fd 4), through which the
// calls' frames go.
TEST(HookProcess, TheHookProcessHoldsTheChannelsMailboxes) {
  if (const char* off = std::getenv("LIZARD_FRAME_MAILBOX"); off && std::string(off) == "0")
    GTEST_SKIP() << "mailboxes turned off (LIZARD_FRAME_MAILBOX=0)";
  auto kmeans = compile_example("kmeans");
  auto hp = HookProcess::start(kmeans.library, "host.cpp", {});
  ASSERT_TRUE(hp.ok()) << hp.status().message();
  char target[128] = {};
  const std::string link = "/proc/" + std::to_string((*hp)->pid()) + "/fd/4";
  ASSERT_GT(::readlink(link.c_str(), target, sizeof target - 1), 0) << link;
  EXPECT_EQ(std::string(target).rfind(std::string("/memfd:") + FrameMailboxes::kName, 0), 0u)
      << target;
}

// The hooks give in their process exactly what they give when called here.
TEST(HookProcess, ResultsAreThoseOfTheHooksCalledInProcess) {
  auto c = compile_example("anneal");
  const Manifest& m = c.image.manifest;
  const ParamValues p = params_of(m, {{"cooling", 0.5}, {"max_iterations", 3}});
  auto lib = SharedLibrary::open(c.library);
  ASSERT_TRUE(lib.ok()) << lib.status().message();
  auto init = lib->symbol<void (*)(const void*, void*)>("init_global_state");
  auto agg_fn = lib->symbol<void (*)(const void*, void*, const void*)>("aggregate");
  auto update =
      lib->symbol<int (*)(const void*, const void*, void*, int64_t)>("update_global_state");
  ASSERT_TRUE(init && agg_fn && update);
  const auto packed_params = pack_params(params_layout(m), p);
  const StructLayout sl = state_layout(m), al = aggregate_layout(m);
  auto addr = [](const SectionBuffer& s) { return reinterpret_cast<uint64_t>(s.bytes.data()); };

  HookRun run = start_run(c, p);
  ASSERT_TRUE(run.hooks);
  SectionBuffer here = run.state;
  auto st = pack_section(sl, here, addr(here));
  init(packed_params.data(), st.data());
  unpack_section_values(sl, st, &here);
  ASSERT_EQ(run.hooks->init_state(&run.state).value(), true);
  EXPECT_EQ(run.state.bytes, here.bytes);

  std::mt19937 rng(7);
  for (int64_t it = 0; it < 3; ++it) {
    SectionBuffer running = run.agg, partial = run.agg;
    fill_random(&running, &rng);
    fill_random(&partial, &rng);
    const int32_t one = 1;
    std::memcpy(partial.data(*partial.find("has_value")), &one, sizeof one);
    SectionBuffer running_here = running;
    auto r = pack_section(al, running_here, addr(running_here));
    auto q = pack_section(al, partial, addr(partial));
    agg_fn(packed_params.data(), r.data(), q.data());
    ASSERT_TRUE(run.hooks->aggregate(&running, partial, it).ok());
    EXPECT_EQ(running.bytes, running_here.bytes) << "iteration " << it;

    auto a = pack_section(al, running_here, addr(running_here));
    st = pack_section(sl, here, addr(here));
    const bool done_here = update(packed_params.data(), a.data(), st.data(), it) != 0;
    unpack_section_values(sl, st, &here);
    auto done = run.hooks->update_state(running, &run.state, it);
    ASSERT_TRUE(done.ok()) << done.status().message();
    EXPECT_EQ(*done, done_here);
    EXPECT_EQ(run.state.bytes, here.bytes) << "iteration " << it;
  }
}

TEST(HookProcess, ArrayAndScalarFieldsComeBackChanged) {
  auto c = faulty_program();
  const ParamValues p = params_of(c.image.manifest, {{"mode", 0}});
  HookRun run = start_run(c, p);
  ASSERT_TRUE(run.hooks);
  EXPECT_FALSE(run.hooks->init_state(&run.state).value());  // no init hook
  for (int64_t it = 0; it < 6; ++it) {
    set_sum(&run.agg, 1.5 * static_cast<double>(it));
    auto done = run.hooks->update_state(run.agg, &run.state, it);
    ASSERT_TRUE(done.ok()) << done.status().message();
    EXPECT_EQ(*done, it >= 5);
  }
  EXPECT_DOUBLE_EQ(total_of(run.state), 1.5 * 15);
  const auto* seen = reinterpret_cast<const int64_t*>(run.state.data(*run.state.find("seen")));
  EXPECT_EQ(seen[0], 2);
  EXPECT_EQ(seen[1], 2);
  EXPECT_EQ(seen[2], 2);
}

// Every iteration's update call, once its buffers have grown, allocates
// nothing in the daemon that makes it.
TEST(HookProcess, AnUpdateCallAllocatesNothingOnceItsBuffersHaveGrown) {
  auto c = faulty_program();
  const ParamValues p = params_of(c.image.manifest, {{"mode", 0}});
  HookRun run = start_run(c, p);
  ASSERT_TRUE(run.hooks);
  set_sum(&run.agg, 0.5);
  for (int64_t it = 2; it < 5; ++it)
    ASSERT_TRUE(run.hooks->update_state(run.agg, &run.state, it).ok());
  int ok = 0;
  const uint64_t before = testing::allocations();
  for (int64_t it = 5; it < 35; ++it) ok += run.hooks->update_state(run.agg, &run.state, it).ok();
  const uint64_t allocated = testing::allocations() - before;
  EXPECT_EQ(ok, 30);
  EXPECT_EQ(allocated, 0u);
  EXPECT_DOUBLE_EQ(total_of(run.state), 0.5 * 33);
}

// A loop's hooks are set up while its first iteration runs: the setup's
// answer is read by the first call, and a setup that was never awaited (a
// loop that ended before its first call) is read before the next run's.
TEST(HookProcess, ASetupInTheBackgroundIsAnsweredBeforeTheFirstCall) {
  auto c = faulty_program();
  const ParamValues p = params_of(c.image.manifest, {{"mode", 0}});
  HookProcessOptions opts;
  opts.setup_in_background = true;
  HookRun run = start_run(c, p, opts);  // its setup is awaited by no call
  ASSERT_TRUE(run.hooks);
  // The next run's setup, as a process kept idle gets it.
  ASSERT_TRUE(run.hooks->setup(c.image.manifest, p, RunValues{}, run.state, run.agg).ok());
  set_sum(&run.agg, 2.5);
  auto done = run.hooks->update_state(run.agg, &run.state, 0);
  ASSERT_TRUE(done.ok()) << done.status().message();
  EXPECT_FALSE(*done);
  EXPECT_DOUBLE_EQ(total_of(run.state), 2.5);
  set_sum(&run.agg, 1.0);
  ASSERT_TRUE(run.hooks->update_state(run.agg, &run.state, 1).ok());  // answers stay in step
  EXPECT_DOUBLE_EQ(total_of(run.state), 3.5);
}

TEST(HookProcess, ASetupInTheBackgroundThatFindsTheProcessGoneFailsTheFirstCall) {
  auto c = faulty_program();
  HookProcessOptions opts;
  opts.setup_in_background = true;
  HookRun run = start_run(c, params_of(c.image.manifest, {{"mode", 0}}), opts);
  ASSERT_TRUE(run.hooks);
  ASSERT_EQ(::kill(run.hooks->pid(), SIGKILL), 0);
  auto r = run.hooks->update_state(run.agg, &run.state, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kRuntimeError);
  EXPECT_NE(r.status().message().find("killed by signal 9"), std::string::npos)
      << r.status().message();
}

// Each fault at iteration 1 fails that call with the hook's name, the
// iteration and how the process ended; later calls fail the same way.
void expect_fault(int mode, const std::string& ending) {
  auto c = faulty_program();
  HookRun run = start_run(c, params_of(c.image.manifest, {{"mode", mode}}));
  ASSERT_TRUE(run.hooks);
  const pid_t pid = run.hooks->pid();
  ASSERT_TRUE(run.hooks->update_state(run.agg, &run.state, 0).ok());
  auto r = run.hooks->update_state(run.agg, &run.state, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kRuntimeError);
  EXPECT_EQ(r.status().message(),
            "host hook update_global_state (iteration 1) ended the hook process: " + ending);
  auto again = run.hooks->update_state(run.agg, &run.state, 2);
  EXPECT_EQ(again.status().message(), r.status().message());
  EXPECT_TRUE(process_gone(pid));
}

TEST(HookProcess, ASegmentationFaultEndsTheCallNotThisProcess) {
  expect_fault(1, "killed by signal 11 (SIGSEGV, a segmentation fault)");
}

TEST(HookProcess, AbortEndsTheCall) {
  expect_fault(2, "killed by signal 6 (SIGABRT, abort())");
}

TEST(HookProcess, ExitEndsTheCall) {
  expect_fault(3, "exited with status 0");
}

TEST(HookProcess, AnEndlessLoopIsKilledAfterTheTimeLimit) {
  auto c = faulty_program();
  HookProcessOptions opts;
  opts.timeout_setting = "--hook-timeout-s";
  HookRun run = start_run(c, params_of(c.image.manifest, {{"mode", 4}}), opts);
  ASSERT_TRUE(run.hooks);
  // Loading the library may take longer on a loaded machine (sanitizers):
  // the short limit is for the calls.
  run.hooks->set_call_timeout_ms(300);
  const pid_t pid = run.hooks->pid();
  ASSERT_TRUE(run.hooks->update_state(run.agg, &run.state, 0).ok());
  const auto t0 = Clock::now();
  auto r = run.hooks->update_state(run.agg, &run.state, 1);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(3));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "host hook update_global_state (iteration 1) did not finish within 300 ms "
            "(--hook-timeout-s); the hook process was killed");
  EXPECT_TRUE(process_gone(pid));
}

TEST(HookProcess, AnInterruptionEndsAHookThatIsRunning) {
  auto c = faulty_program();
  std::atomic<bool> cancel{false};
  HookProcessOptions opts;
  opts.interrupted = [&] { return cancel ? Status(Code::kCancelled, "cancelled") : Status::Ok(); };
  HookRun run = start_run(c, params_of(c.image.manifest, {{"mode", 4}}), opts);
  ASSERT_TRUE(run.hooks);
  ASSERT_TRUE(run.hooks->update_state(run.agg, &run.state, 0).ok());
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel = true;
  });
  const auto t0 = Clock::now();
  auto r = run.hooks->update_state(run.agg, &run.state, 1);
  canceller.join();
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(2));
  EXPECT_EQ(r.status().code(), Code::kCancelled);
  EXPECT_TRUE(process_gone(run.hooks->pid()));
}

TEST(HookProcess, AStaticInitialiserThatAbortsFailsTheStart) {
  auto c = faulty_program("static int crash = (abort(), 0);");
  auto hp = HookProcess::start(c.library, "host.cpp", {});
  ASSERT_FALSE(hp.ok());
  EXPECT_EQ(hp.status().code(), Code::kRuntimeError);
  EXPECT_EQ(hp.status().message(),
            "loading host.cpp (its static initialisers) ended the hook process: killed by "
            "signal 6 (SIGABRT, abort())");
}

TEST(HookProcess, AStaticInitialiserThatExitsFailsTheStart) {
  auto c = faulty_program("static int leave = (exit(0), 0);");
  auto hp = HookProcess::start(c.library, "host.cpp", {});
  ASSERT_FALSE(hp.ok());
  EXPECT_NE(hp.status().message().find("ended the hook process: exited with status 0"),
            std::string::npos)
      << hp.status().message();
}

TEST(HookProcess, ALibraryThatDoesNotLoadIsAnError) {
  auto hp = HookProcess::start("/nonexistent/libhooks.so", "host.cpp", {});
  ASSERT_FALSE(hp.ok());
  EXPECT_NE(hp.status().message().find("host.cpp: the hook process cannot load it"),
            std::string::npos)
      << hp.status().message();
}

TEST(HookProcess, KillEndsTheProcessAndLaterCalls) {
  auto c = faulty_program();
  HookRun run = start_run(c, params_of(c.image.manifest, {{"mode", 0}}));
  ASSERT_TRUE(run.hooks);
  const pid_t pid = run.hooks->pid();
  run.hooks->kill();
  EXPECT_TRUE(process_gone(pid));
  EXPECT_FALSE(run.hooks->update_state(run.agg, &run.state, 0).ok());
}

}  // namespace
}  // namespace lizard
