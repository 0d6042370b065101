// AheadBuilds: each variant a queued run needs is compiled once into the
// host's cache, in the background, and then counts as built.
#include "client/ahead_builds.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "program/layout.h"
#include "program/testing/program_images.h"

namespace lizard {
namespace {

namespace fs = std::filesystem;

// The nice value of /proc/<which>, from its stat line (field 19).
int nice_of(const std::string& which) {
  std::ifstream in("/proc/" + which + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string f;
  for (int i = 3; i <= 19 && fields >> f; ++i) {
  }
  return std::stoi(f);
}

// A VariantCompiler for the CPU backend, caching in `dir` (emptied first
// unless `fresh` is false).
Result<std::unique_ptr<VariantCompiler>> cpu_compiler(const fs::path& dir, bool fresh = true) {
  if (fresh) fs::remove_all(dir);
  BackendOptions o;
  o.cache_dir = dir.string();
  ExecutorInfo cpu;
  cpu.kind = "cpu";
  return VariantCompiler::make(o, {cpu});
}

TEST(AheadBuilds, BuildsEachRequestedVariantOnceIntoTheCache) {
  const fs::path dir = fs::path(::testing::TempDir()) / "lizard-ahead-builds-test";
  auto compiler = cpu_compiler(dir);
  ASSERT_TRUE(compiler.ok()) << compiler.status().message();
  AheadBuilds ahead(std::move(compiler).value(), 2);
  auto program = std::make_shared<const ProgramImage>(testing::column_sums_image());
  auto params = bind_params(program->manifest, {{"dims", 3}});
  ASSERT_TRUE(params.ok());
  const ProgramVariant variant = variant_for_run(*program, *params);
  EXPECT_TRUE(ahead.needs_compile(variant));
  ahead.request(program, *params);
  ahead.request(program, *params);  // queued or building already: not again
  for (int i = 0; i < 600 && ahead.needs_compile(variant); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(ahead.needs_compile(variant));
  ahead.request(program, *params);  // built: not again
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(ahead.compiled(), 1);
  // Another AheadBuilds of the host (another worker) finds it in the cache.
  AheadBuilds other(cpu_compiler(dir, false).value(), 1);
  EXPECT_FALSE(other.needs_compile(variant));
  auto two = bind_params(program->manifest, {{"dims", 4}});
  ASSERT_TRUE(two.ok());
  EXPECT_TRUE(other.needs_compile(variant_for_run(*program, *two)));
  fs::remove_all(dir);
}

// A withdrawn variant still queued is dropped, and not built; one that is
// building or built is left; a later request queues it again.
TEST(AheadBuilds, AWithdrawnVariantStillQueuedIsNotBuilt) {
  const fs::path dir = fs::path(::testing::TempDir()) / "lizard-ahead-withdraw-test";
  auto compiler = cpu_compiler(dir);
  ASSERT_TRUE(compiler.ok()) << compiler.status().message();
  AheadBuilds ahead(std::move(compiler).value(), 1);  // one build at a time
  auto program = std::make_shared<const ProgramImage>(testing::column_sums_image());
  std::vector<ParamValues> params;
  for (int dims : {3, 4, 5})
    params.push_back(bind_params(program->manifest, {{"dims", dims}}).value());
  for (const ParamValues& p : params) ahead.request(program, p);
  EXPECT_TRUE(ahead.withdraw(*program, params[2]));   // queued behind the other two
  EXPECT_FALSE(ahead.withdraw(*program, params[2]));  // gone already
  auto built = [&](const ParamValues& p) {
    return !ahead.needs_compile(variant_for_run(*program, p));
  };
  for (int i = 0; i < 600 && !(built(params[0]) && built(params[1])); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(built(params[0]) && built(params[1]));
  EXPECT_FALSE(built(params[2]));
  EXPECT_EQ(ahead.compiled(), 2);
  EXPECT_FALSE(ahead.withdraw(*program, params[0]));  // built: left
  ahead.request(program, params[2]);
  for (int i = 0; i < 600 && !built(params[2]); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(built(params[2]));
  fs::remove_all(dir);
}

// A VariantCompiler for GPU executors of sm_90 (NVRTC compiles without a
// GPU), caching in `dir` (emptied first).
Result<std::unique_ptr<VariantCompiler>> sm90_compiler(const fs::path& dir, bool quick_builds) {
  fs::remove_all(dir);
  BackendOptions o;
  o.cache_dir = dir.string();
  o.quick_builds = quick_builds;
  ExecutorInfo gpu;
  gpu.kind = "cuda";
  gpu.arch = "sm_90";
  return VariantCompiler::make(o, {gpu});
}

// For GPU executors that begin runs on quick builds, every requested
// variant's quick build is made as well as its optimised one, on threads of
// their own, and a run whose quick build is in the cache waits for no
// compile.
// (NVRTC compiles without a GPU.)
TEST(AheadBuildsNvrtc, QuickBuildsAreMadeForGpuExecutors) {
  const fs::path dir = fs::path(::testing::TempDir()) / "lizard-ahead-quick-test";
  auto made = sm90_compiler(dir, true);
  if (!made.ok()) GTEST_SKIP() << "NVRTC unavailable: " << made.status().message();
  const VariantCompiler* compiler = made->get();
  ASSERT_TRUE(compiler->tiered());
  AheadBuilds ahead(std::move(made).value(), 1);
  auto program = std::make_shared<const ProgramImage>(testing::column_sums_image());
  std::vector<ProgramVariant> variants;
  for (int dims : {3, 4, 5}) {
    auto params = bind_params(program->manifest, {{"dims", dims}});
    ASSERT_TRUE(params.ok());
    variants.push_back(variant_for_run(*program, *params));
    EXPECT_TRUE(ahead.needs_compile(variants.back()));
    ahead.request(program, *params);
  }
  auto all_cached = [&](BuildTier tier) {
    for (const auto& v : variants)
      if (!compiler->cached(v, tier)) return false;
    return true;
  };
  const ProgramVariant& last = variants.back();
  for (int i = 0; i < 1200 && !compiler->cached(last, BuildTier::kOptimised); ++i) {
    // A fast build in the cache needs no compile; no compile is needed
    // only once a build is in the cache.
    const bool quick_before = compiler->cached(last, BuildTier::kFast);
    const bool needs = ahead.needs_compile(last);
    const bool any_after =
        compiler->cached(last, BuildTier::kFast) || compiler->cached(last, BuildTier::kOptimised);
    EXPECT_TRUE(!quick_before || !needs);
    EXPECT_TRUE(needs || any_after);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int i = 0; i < 600 && !all_cached(BuildTier::kFast); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(all_cached(BuildTier::kFast));
  for (int i = 0; i < 600 && !all_cached(BuildTier::kOptimised); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(all_cached(BuildTier::kOptimised));
  for (const auto& v : variants) EXPECT_FALSE(ahead.needs_compile(v));
  // A build is in the cache a moment before its thread counts it.
  for (int i = 0; i < 100 && ahead.compiled() < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(ahead.compiled(), 3);
  fs::remove_all(dir);
}

// With quick builds off, only the optimised builds are made.
TEST(AheadBuildsNvrtc, NoQuickBuildsWhenTheExecutorsWaitForOptimisedOnes) {
  const fs::path dir = fs::path(::testing::TempDir()) / "lizard-ahead-noquick-test";
  auto made = sm90_compiler(dir, false);
  if (!made.ok()) GTEST_SKIP() << "NVRTC unavailable: " << made.status().message();
  const VariantCompiler* compiler = made->get();
  EXPECT_FALSE(compiler->tiered());
  AheadBuilds ahead(std::move(made).value(), 1);
  auto program = std::make_shared<const ProgramImage>(testing::column_sums_image());
  auto params = bind_params(program->manifest, {{"dims", 6}});
  ASSERT_TRUE(params.ok());
  const ProgramVariant variant = variant_for_run(*program, *params);
  ahead.request(program, *params);
  for (int i = 0; i < 600 && ahead.needs_compile(variant); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(compiler->cached(variant));
  EXPECT_FALSE(compiler->cached(variant, BuildTier::kFast));
  fs::remove_all(dir);
}

// On a GPU worker, builds ahead of queued runs yield the cores to the
// compile a starting run waits for: every thread of an AheadBuilds runs at
// nice 10, the worker's other threads (this one) at their own.
TEST(AheadBuildsNvrtc, ItsThreadsRunAtALowerCpuPriority) {
  const fs::path dir = fs::path(::testing::TempDir()) / "lizard-ahead-priority-test";
  auto compiler = sm90_compiler(dir, true);
  if (!compiler.ok()) GTEST_SKIP() << "NVRTC unavailable: " << compiler.status().message();
  const int own = nice_of("self");
  AheadBuilds ahead(std::move(compiler).value(), 3);
  std::vector<int> nices;
  for (int i = 0; i < 200 && nices.size() < 3; ++i) {
    nices.clear();
    for (const auto& task : fs::directory_iterator("/proc/self/task")) {
      std::ifstream comm(task.path() / "comm");
      std::string name;
      std::getline(comm, name);
      if (name == "lizard-ahead")
        nices.push_back(nice_of("self/task/" + task.path().filename().string()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GE(nices.size(), 3u);  // and the threads of its fast builds
  for (int n : nices) EXPECT_EQ(n, std::min(19, own + 10));
  EXPECT_EQ(nice_of("self"), own);
  EXPECT_GE(AheadBuilds::default_threads(), 2);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lizard
