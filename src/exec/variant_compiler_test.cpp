// VariantCompiler::cached: a variant's cache entries are named once, but the
// cache itself is looked at every time, so an entry that is gone (evicted,
// or the cache cleared) is seen as missing, and each value and tier is an
// entry of its own.
#include "exec/variant_compiler.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "exec/cpu/kernel_source.h"
#include "exec/host_compiler.h"
#include "exec/testing/program_variants.h"
#include "program/testing/program_images.h"

namespace lizard {
namespace {

namespace fs = std::filesystem;

using testing::variant_with_dims;

Result<std::unique_ptr<VariantCompiler>> compiler_for(const fs::path& dir, const char* kind) {
  fs::remove_all(dir);
  BackendOptions o;
  o.cache_dir = dir.string();
  ExecutorInfo e;
  e.kind = kind;
  if (e.kind == "cuda") e.arch = "sm_90";
  return VariantCompiler::make(o, {e});
}

TEST(VariantCompiler, AnEntryGoneFromTheCacheIsSeenAsMissing) {
  const fs::path dir = fs::path(::testing::TempDir()) / "lizard-variant-compiler-test";
  auto made = compiler_for(dir, "cpu");
  ASSERT_TRUE(made.ok()) << made.status().message();
  const VariantCompiler& vc = **made;
  const ProgramImage program = testing::column_sums_image();
  const ProgramVariant three = variant_with_dims(program, 3);
  EXPECT_FALSE(vc.cached(three));
  bool compiled = false;
  ASSERT_TRUE(vc.compile(three, &compiled).ok());
  EXPECT_TRUE(compiled);
  EXPECT_TRUE(vc.cached(three));
  EXPECT_FALSE(vc.cached(variant_with_dims(program, 4)));  // another value, another entry
  fs::remove_all(dir);                                     // the cache cleared under the compiler
  EXPECT_FALSE(vc.cached(three));
  ASSERT_TRUE(vc.compile(three, &compiled).ok());
  EXPECT_TRUE(compiled);
  EXPECT_TRUE(vc.cached(three));
  fs::remove_all(dir);
}

// The runtime headers the worker precompiles are the ones a program's CPU
// build then reads precompiled: same compiler, flags and inputs, so the
// same place in the cache (executor processes cannot make them).
TEST(VariantCompiler, PrecompiledHeadersLieWhereAProgramsBuildLooksForThem) {
  const fs::path dir = fs::path(::testing::TempDir()) / "lizard-variant-compiler-pch-test";
  auto made = compiler_for(dir, "cpu");
  ASSERT_TRUE(made.ok()) << made.status().message();
  auto plan = plan_cpu_build(testing::column_sums_image());
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const HostCompiler host((dir / "kernels").string());  // as the executors build
  const std::string gch = host.precompiled_path(plan->files, plan->flags, plan->pch);
  ASSERT_FALSE(gch.empty());
  EXPECT_FALSE(fs::exists(gch));
  (*made)->make_precompiled_headers();
  EXPECT_TRUE(fs::is_regular_file(gch)) << gch;
  fs::remove_all(dir);
}

// (NVRTC compiles without a GPU.)
TEST(VariantCompilerNvrtc, EachTierIsAnEntryOfItsOwnLookedUpEveryTime) {
  const fs::path dir = fs::path(::testing::TempDir()) / "lizard-variant-compiler-nvrtc-test";
  auto made = compiler_for(dir, "cuda");
  if (!made.ok()) GTEST_SKIP() << "NVRTC unavailable: " << made.status().message();
  const VariantCompiler& vc = **made;
  const ProgramVariant three = variant_with_dims(testing::column_sums_image(), 3);
  bool compiled = false;
  ASSERT_TRUE(vc.compile(three, &compiled, BuildTier::kQuick).ok());
  EXPECT_TRUE(vc.cached(three, BuildTier::kQuick));
  EXPECT_FALSE(vc.cached(three, BuildTier::kOptimised));
  fs::remove_all(dir);
  EXPECT_FALSE(vc.cached(three, BuildTier::kQuick));
  ASSERT_TRUE(vc.compile(three, &compiled, BuildTier::kOptimised).ok());
  EXPECT_TRUE(vc.cached(three, BuildTier::kOptimised));
  EXPECT_FALSE(vc.cached(three, BuildTier::kQuick));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lizard
