// GPU tests of the CUDA backend.  They skip where there is no usable GPU,
// and fail instead when LIZARD_REQUIRE_GPU=1 (the `gpu` test label sets it).
#include "exec/cuda/cuda_executor.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "exec/cuda/test_program.h"
#include "program/reducers.h"

namespace lizard::cuda {
namespace {

const char* kYaml = R"(
info: {name: shift}
sources: {cuda: kernel.cu}
params:
  crash: {type: int32, default: 0}
dataset:
  x: {type: int32, shape: [rows]}
  y: {type: int32, shape: [rows], input: false, output: true}
state:
  offset: {type: int32}
aggregate:
  total: {type: int64, reduce: sum}
  low:   {type: int32, reduce: min}
  hist:  {type: int32, shape: [4], reduce: sum}
  ysum:  {type: int64, reduce: sum}
iterate:
  - kernel: shift
  - kernel: sum_y
    blocks: sm_count
    block: 128
    shared_bytes: 65536
)";

const char* kKernel = R"(
#include "lizard_program.h"
extern "C" __global__ void shift(global_params_t params, dataset_t data,
                                 global_state_t state, agg_res_t result) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (params.crash) *(volatile int*)(16) = 1;
  if (i >= data.rows) return;
  int v = data.x[i] + state.offset;
  data.y[i] = v;
  atomicAdd((unsigned long long*)result.total, (unsigned long long)(long long)v);
  atomicMin(result.low, v);
  atomicAdd(&result.hist[data.x[i] & 3], 1);
}
// Grid-stride sum of y through 64 KiB of dynamic shared memory.
extern "C" __global__ void sum_y(global_params_t params, dataset_t data,
                                 global_state_t state, agg_res_t result) {
  extern __shared__ long long partial[];
  long long s = 0;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < data.rows;
       i += (int64_t)gridDim.x * blockDim.x)
    s += data.y[i];
  partial[threadIdx.x] = s;
  partial[8191 - threadIdx.x] = 0;  // touches the far end of the 64 KiB
  __syncthreads();
  if (threadIdx.x == 0) {
    long long t = 0;
    for (int k = 0; k < blockDim.x; ++k) t += partial[k];
    atomicAdd((unsigned long long*)result.ysum, (unsigned long long)t);
  }
}
)";

class CudaGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    auto gpus = make_cuda_executors(CudaOptions{});
    if (!gpus.ok()) {
      const char* req = std::getenv("LIZARD_REQUIRE_GPU");
      if (req && std::string(req) == "1") FAIL() << "no CUDA device: " << gpus.status().message();
      GTEST_SKIP() << "no CUDA device: " << gpus.status().message();
    }
    gpu_ = std::move(gpus->front());
    program_ = make_test_program(kYaml, {{"kernel.cu", kKernel}});
  }

  ParamValues params(int crash) {
    auto p = bind_params(program_.manifest, {{"crash", crash}});
    EXPECT_TRUE(p.ok()) << p.status().message();
    return p.ok() ? *p : ParamValues{};
  }

  PartitionData partition(const std::vector<int32_t>& x) {
    PartitionData d;
    d.rows = static_cast<int64_t>(x.size());
    d.fields.resize(2);
    d.fields[0].resize(x.size() * 4);
    std::memcpy(d.fields[0].data(), x.data(), d.fields[0].size());
    return d;
  }

  SectionBuffer section(const std::vector<FieldSpec>& fields, const ParamValues& p) {
    auto s = make_section(fields, program_.manifest, p);
    EXPECT_TRUE(s.ok()) << s.status().message();
    return s.ok() ? *s : SectionBuffer{};
  }

  template <typename T>
  static T get(const SectionBuffer& s, const std::string& name, int k = 0) {
    T v;
    std::memcpy(&v, s.data(*s.find(name)) + k * sizeof(T), sizeof(T));
    return v;
  }

  std::unique_ptr<Executor> gpu_;
  ProgramImage program_;
};

TEST_F(CudaGpu, RunsAProgramAndMatchesTheHost) {
  std::vector<int32_t> x(100003);
  uint32_t seed = 12345;
  for (auto& v : x) {
    seed = seed * 1664525u + 1013904223u;
    v = static_cast<int32_t>(seed >> 12) % 100000 - 50000;
  }
  ASSERT_TRUE(gpu_->build(program_).ok());
  ParamValues p = params(0);
  Status st = gpu_->begin_run(program_, p, partition(x));
  ASSERT_TRUE(st.ok()) << st.message();
  SectionBuffer state = section(program_.manifest.state, p);
  SectionBuffer agg = section(program_.manifest.aggregate, p);
  for (int32_t offset : {7, -3}) {
    std::memcpy(state.data(*state.find("offset")), &offset, 4);
    std::memset(agg.bytes.data(), 0x5a, agg.bytes.size());  // poison: the executor must reset it
    IterationStats stats;
    st = gpu_->iterate(state, &agg, &stats);
    ASSERT_TRUE(st.ok()) << st.message();
    int64_t total = 0;
    int32_t low = INT32_MAX;
    int32_t hist[4] = {0, 0, 0, 0};
    for (int32_t v : x) {
      total += v + offset;
      low = std::min(low, v + offset);
      hist[v & 3]++;
    }
    EXPECT_EQ(get<int64_t>(agg, "total"), total);
    EXPECT_EQ(get<int64_t>(agg, "ysum"), total);
    EXPECT_EQ(get<int32_t>(agg, "low"), low);
    for (int k = 0; k < 4; ++k) EXPECT_EQ(get<int32_t>(agg, "hist", k), hist[k]) << k;
    EXPECT_GT(stats.kernel_ms, 0);
    EXPECT_GE(stats.total_ms, stats.kernel_ms);
  }
  auto out = gpu_->end_run(true);
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_TRUE((*out)[0].empty());
  ASSERT_EQ((*out)[1].size(), x.size() * 4);
  std::vector<int32_t> y(x.size());
  std::memcpy(y.data(), (*out)[1].data(), (*out)[1].size());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], x[i] - 3) << i;
}

TEST_F(CudaGpu, KernelFaultFailsTheIterationAndTheNextRunWorks) {
  std::vector<int32_t> x(1000, 1);
  ParamValues bad = params(1);
  ASSERT_TRUE(gpu_->begin_run(program_, bad, partition(x)).ok());
  SectionBuffer state = section(program_.manifest.state, bad);
  SectionBuffer agg = section(program_.manifest.aggregate, bad);
  IterationStats stats;
  Status st = gpu_->iterate(state, &agg, &stats);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kRuntimeError);
  EXPECT_NE(st.message().find("CUDA_ERROR_"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("shift"), std::string::npos) << st.message();
  EXPECT_FALSE(gpu_->iterate(state, &agg, &stats).ok());  // the run stays failed
  EXPECT_FALSE(gpu_->end_run(true).ok());

  ParamValues good = params(0);
  st = gpu_->begin_run(program_, good, partition(x));
  ASSERT_TRUE(st.ok()) << st.message();
  st = gpu_->iterate(state, &agg, &stats);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(get<int64_t>(agg, "total"), 1000);
  EXPECT_TRUE(gpu_->end_run(false).ok());
}

TEST_F(CudaGpu, PartitionTooLargeForTheDeviceNamesTheField) {
  ProgramImage big = make_test_program(R"(
sources: {cuda: kernel.cu}
dataset:
  x:    {type: int32, shape: [rows]}
  huge: {type: float64, shape: [rows, 1048576], input: false}
iterate: [touch]
)",
                                       {{"kernel.cu", R"(
#include "lizard_program.h"
extern "C" __global__ void touch(global_params_t p, dataset_t d, global_state_t s, agg_res_t r) {}
)"}});
  auto p = bind_params(big.manifest, nlohmann::json::object());
  ASSERT_TRUE(p.ok()) << p.status().message();
  PartitionData d;
  d.rows = 1 << 20;
  d.fields.resize(2);
  d.fields[0].resize(size_t{4} << 20);
  Status st = gpu_->begin_run(big, *p, std::move(d));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kTooLarge);
  EXPECT_NE(st.message().find("'huge' needs 8796093022208 bytes"), std::string::npos)
      << st.message();
}

TEST_F(CudaGpu, CompileErrorReachesBuild) {
  ProgramImage bad = make_test_program(kYaml, {{"kernel.cu", "this is not CUDA"}});
  Status st = gpu_->build(bad);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kCompileError);
  EXPECT_NE(st.message().find("NVRTC (" + gpu_->info().arch + ") failed"), std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace lizard::cuda
