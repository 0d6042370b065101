// AheadBuilds: each variant a queued run needs is compiled once into the
// host's cache, in the background, and then counts as built.
#include "client/ahead_builds.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "program/layout.h"
#include "program/testing/program_images.h"

namespace lizard {
namespace {

namespace fs = std::filesystem;

const char* kYaml =
    "sources: {cuda: kernel.cu}\n"
    "params: {dims: {type: int32, specialize: true, default: 2}}\n"
    "dataset: {x: {type: float32, shape: [rows, dims]}}\n"
    "aggregate: {sums: {type: float32, shape: [dims], reduce: sum}}\n"
    "iterate: [column_sums]\n";
const char* kKernel = R"(#include "lizard_program.h"
extern "C" __global__ void column_sums(global_params_t p, dataset_t d, global_state_t s,
                                       agg_res_t r) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= d.rows) return;
  for (int j = 0; j < p.dims; ++j) atomicAdd(&r.sums[j], d.x[i * p.dims + j]);
}
)";

TEST(AheadBuilds, BuildsEachRequestedVariantOnceIntoTheCache) {
  const fs::path dir = fs::path(::testing::TempDir()) / "lizard-ahead-builds-test";
  fs::remove_all(dir);
  BackendOptions o;
  o.cache_dir = dir.string();
  ExecutorInfo cpu;
  cpu.kind = "cpu";
  auto compiler = VariantCompiler::make(o, {cpu});
  ASSERT_TRUE(compiler.ok()) << compiler.status().message();
  AheadBuilds ahead(std::move(compiler).value(), 2);
  auto program = std::make_shared<const ProgramImage>(testing::program_image(kYaml, kKernel));
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
  AheadBuilds other(VariantCompiler::make(o, {cpu}).value(), 1);
  EXPECT_FALSE(other.needs_compile(variant));
  auto two = bind_params(program->manifest, {{"dims", 4}});
  ASSERT_TRUE(two.ok());
  EXPECT_TRUE(other.needs_compile(variant_for_run(*program, *two)));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lizard
