// The examples and the device library's conformance programs compile with
// NVRTC for a Hopper GPU at the specialised values the benchmark of record
// uses.  Needs NVRTC, not a GPU; skips without it.
#include <gtest/gtest.h>

#include "exec/cuda/nvrtc_compiler.h"
#include "exec/program_variant.h"
#include "program/bundle.h"

namespace lizard::cuda {
namespace {

struct Build {
  std::string dir;  // under the source tree
  nlohmann::json params;
};

TEST(DeviceLibraryNvrtc, ExamplesAndLibraryCasesCompileForSm90) {
  auto cc = NvrtcCompiler::open("/usr/local/cuda", "");
  if (!cc.ok()) GTEST_SKIP() << "NVRTC unavailable: " << cc.status().message();
  const std::vector<Build> builds = {
      {"examples/kmeans", {{"k", 16}, {"dims", 32}}},
      {"examples/kmeans", {{"k", 64}, {"dims", 8}}},
      {"examples/kmeans", {{"k", 256}, {"dims", 64}}},
      {"examples/kmeans", {{"k", 5}, {"dims", 3}}},
      {"examples/sum", {{"dims", 8}}},
      {"examples/logreg", {{"dims", 6}}},
      {"examples/anneal", nlohmann::json::object()},
      {"tests/conformance/cases/device_library", {{"classes", 5}, {"width", 4}}},
      {"tests/conformance/cases/device_library_rows", {{"classes", 16}, {"width", 32}}},
      {"tests/conformance/cases/device_library_folds",
       {{"classes", 16}, {"width", 8}, {"spread", 300}}},
  };
  for (const Build& b : builds) {
    SCOPED_TRACE(b.dir + " " + b.params.dump());
    auto bundle = read_program_dir(std::string(LIZARD_SOURCE_DIR) + "/" + b.dir);
    ASSERT_TRUE(bundle.ok()) << bundle.status().message();
    auto image = make_program_image(*bundle);
    ASSERT_TRUE(image.ok()) << image.status().message();
    auto params = bind_params(image->manifest, b.params);
    ASSERT_TRUE(params.ok()) << params.status().message();
    const ProgramVariant v = variant_for_run(*image, *params);
    auto out = (*cc)->compile(v.image, "sm_90");
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_FALSE(out->cubin.empty());
  }
}

// examples/kmeans compiles at every shape a user may give it: its kernel
// combines a table of centroids, a BlockSum of [k, dims] and one of [k], and
// their shared-memory copies together stay within a block's 48 KiB of static
// shared memory (ptxas refuses a kernel beyond it).  Quick builds: the
// static shared memory is the same at both tiers, and they compile faster.
TEST(DeviceLibraryNvrtc, KmeansCompilesAtEveryShape) {
  auto cc = NvrtcCompiler::open("/usr/local/cuda", "");
  if (!cc.ok()) GTEST_SKIP() << "NVRTC unavailable: " << cc.status().message();
  auto bundle = read_program_dir(std::string(LIZARD_SOURCE_DIR) + "/examples/kmeans");
  ASSERT_TRUE(bundle.ok()) << bundle.status().message();
  auto image = make_program_image(*bundle);
  ASSERT_TRUE(image.ok()) << image.status().message();
  const std::vector<std::pair<int, int>> shapes = {
      {40, 32}, {48, 32}, {64, 32}, {36, 32}, {64, 16},  {96, 16},  {128, 16}, {255, 4},
      {256, 8}, {128, 8}, {24, 64}, {32, 64}, {1000, 2}, {512, 16}, {63, 16},  {31, 32},
      {32, 32}, {56, 16}, {127, 8}, {511, 4}, {2048, 2}, {1024, 8}, {16, 128}, {4096, 8},
      {50, 32}, {55, 32}, {56, 32}, {16, 64}, {31, 64},  {100, 16}};
  for (const auto& [k, dims] : shapes) {
    SCOPED_TRACE("k=" + std::to_string(k) + ", dims=" + std::to_string(dims));
    auto params = bind_params(image->manifest, {{"k", k}, {"dims", dims}});
    ASSERT_TRUE(params.ok()) << params.status().message();
    auto out = (*cc)->compile(variant_for_run(*image, *params).image, "sm_90", BuildTier::kQuick);
    EXPECT_TRUE(out.ok()) << out.status().message();
  }
}

}  // namespace
}  // namespace lizard::cuda
