// A kernel set (exec/program_variant.h) compiles only its own kernels: the
// iterate set's cubin holds no generator and the generate set's no iterate
// kernel, while a program's whole build holds both.  Needs NVRTC, no GPU.
#include <gtest/gtest.h>

#include "exec/cuda/nvrtc_compiler.h"
#include "exec/cuda/test_program.h"
#include "exec/program_variant.h"

namespace lizard::cuda {
namespace {

const char* kYaml = R"(
sources: {cuda: kernel.cu}
dataset:
  x: {type: float32, shape: [rows]}
aggregate:
  total: {type: float32, reduce: sum}
generate:
  - kernel: fill_rows
iterate:
  - kernel: add_rows
)";

const char* kKernel = R"(
#include "lizard_program.h"
extern "C" __global__ void fill_rows(global_params_t params, dataset_t data,
                                     global_state_t state, agg_res_t result) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < data.rows) data.x[i] = 1.0f;
}
extern "C" __global__ void add_rows(global_params_t params, dataset_t data,
                                    global_state_t state, agg_res_t result) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < data.rows) atomicAdd(result.total, data.x[i]);
}
)";

bool holds(const std::string& cubin, const std::string& name) {
  return cubin.find(name + '\0') != std::string::npos;  // a symbol in the ELF's string table
}

TEST(KernelSetNvrtc, EachSetCompilesOnlyItsKernels) {
  auto cc = NvrtcCompiler::open("/usr/local/cuda", "");
  if (!cc.ok()) GTEST_SKIP() << "NVRTC unavailable: " << cc.status().message();
  const ProgramVariant all = variant_for_build(make_test_program(kYaml, {{"kernel.cu", kKernel}}));
  const ProgramVariant iterate = kernel_set(all, KernelSet::kIterate);
  const ProgramVariant generate = kernel_set(all, KernelSet::kGenerate);
  EXPECT_NE(iterate.key, all.key);
  EXPECT_NE(iterate.key, generate.key);

  auto whole = (*cc)->compile(all.image, "sm_90", BuildTier::kQuick);
  auto it = (*cc)->compile(iterate.image, "sm_90", BuildTier::kQuick);
  auto gen = (*cc)->compile(generate.image, "sm_90", BuildTier::kQuick);
  ASSERT_TRUE(whole.ok() && it.ok() && gen.ok()) << whole.status().message();
  EXPECT_TRUE(holds(whole->cubin, "fill_rows") && holds(whole->cubin, "add_rows"));
  EXPECT_TRUE(holds(it->cubin, "add_rows"));
  EXPECT_FALSE(holds(it->cubin, "fill_rows"));
  EXPECT_TRUE(holds(gen->cubin, "fill_rows"));
  EXPECT_FALSE(holds(gen->cubin, "add_rows"));
  // Builds of different sets are different cache entries.
  EXPECT_NE((*cc)->cache_key(iterate.image, "sm_90", BuildTier::kQuick),
            (*cc)->cache_key(generate.image, "sm_90", BuildTier::kQuick));
}

}  // namespace
}  // namespace lizard::cuda
