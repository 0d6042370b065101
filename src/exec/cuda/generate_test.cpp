// GPU test: a field that a generator kernel fills keeps every value it was
// given, however large (its zero fill must be done before the generator
// runs).  Skips without a usable GPU; fails instead with LIZARD_REQUIRE_GPU=1.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "exec/cuda/cuda_executor.h"
#include "exec/cuda/nvrtc_compiler.h"
#include "exec/cuda/test_program.h"

namespace lizard::cuda {
namespace {

const char* kYaml = R"(
info: {name: filled}
sources: {cuda: kernel.cu}
dataset:
  v: {type: float32, shape: [rows, 64]}
aggregate:
  zeros: {type: int64, reduce: sum}
  total: {type: float64, reduce: sum}
generate:
  - kernel: fill
iterate:
  - kernel: count
    blocks: "sm_count * 4"
)";

const char* kKernel = R"(
#include "lizard_program.h"
extern "C" __global__ void fill(global_params_t params, dataset_t data, global_state_t state,
                                agg_res_t result) {
  lizard::Row<float, 64> ones;
  for (int j = 0; j < 64; ++j) ones[j] = 1.0f;
  for (const long long row : lizard::rows(data)) lizard::store_row(data.v, row, ones);
}
extern "C" __global__ void count(global_params_t params, dataset_t data, global_state_t state,
                                 agg_res_t result) {
  lizard::BlockSum<&agg_res_t::zeros> zeros(result);
  lizard::BlockSum<&agg_res_t::total> total(result);
  for (const long long row : lizard::rows(data)) {
    const lizard::Row<float, 64> x = lizard::load_row<64>(data.v, row);
    long long z = 0;
    float s = 0;
    for (int j = 0; j < 64; ++j) {
      z += x[j] == 0.0f;
      s += x[j];
    }
    zeros.add(0, z);
    total.add(0, s);
  }
}
)";

// The program compiles for a Hopper GPU (needs NVRTC only).
TEST(GenerateNvrtc, TheTestProgramCompilesForSm90) {
  auto cc = NvrtcCompiler::open("/usr/local/cuda", "");
  if (!cc.ok()) GTEST_SKIP() << "NVRTC unavailable: " << cc.status().message();
  auto out = (*cc)->compile(make_test_program(kYaml, {{"kernel.cu", kKernel}}), "sm_90");
  EXPECT_TRUE(out.ok()) << out.status().message();
}

TEST(CudaGpuGenerate, AGeneratedFieldKeepsEveryRowItWasGiven) {
  auto gpus = make_cuda_executors(CudaOptions{});
  if (!gpus.ok()) {
    if (std::getenv("LIZARD_REQUIRE_GPU")) FAIL() << "no CUDA device: " << gpus.status().message();
    GTEST_SKIP() << "no CUDA device: " << gpus.status().message();
  }
  Executor& gpu = *gpus->front();
  const ProgramImage program = make_test_program(kYaml, {{"kernel.cu", kKernel}});
  auto params = bind_params(program.manifest, nlohmann::json::object());
  ASSERT_TRUE(params.ok()) << params.status().message();
  const int64_t rows = int64_t{1} << 24;  // 4 GiB: long enough to zero that a race shows
  for (int attempt = 0; attempt < 3; ++attempt) {
    PartitionData data;
    data.rows = rows;
    data.fields.resize(1);
    data.generators = {"fill"};
    Status st = gpu.begin_run(program, *params, std::move(data));
    ASSERT_TRUE(st.ok()) << st.message();
    auto state = make_section(program.manifest.state, program.manifest, *params);
    auto agg = make_section(program.manifest.aggregate, program.manifest, *params);
    ASSERT_TRUE(state.ok() && agg.ok());
    ASSERT_TRUE(gpu.iterate(*state, 0, &*agg, nullptr).ok());
    int64_t zeros = 0;
    double total = 0;
    std::memcpy(&zeros, agg->data(*agg->find("zeros")), 8);
    std::memcpy(&total, agg->data(*agg->find("total")), 8);
    EXPECT_EQ(zeros, 0) << "attempt " << attempt;
    EXPECT_EQ(total, static_cast<double>(rows) * 64) << "attempt " << attempt;
    ASSERT_TRUE(gpu.end_run(false).ok());
  }
}

}  // namespace
}  // namespace lizard::cuda
