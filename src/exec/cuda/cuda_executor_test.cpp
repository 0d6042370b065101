// GPU tests of the CUDA backend.  They skip where there is no usable GPU,
// and fail instead when LIZARD_REQUIRE_GPU=1 (the `gpu` test label sets it).
#include "exec/cuda/cuda_executor.h"

#include <gtest/gtest.h>

#include <cstdio>
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
    st = gpu_->iterate(state, 0, &agg, &stats);
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

// Output fields larger than the staging chunks come back through the pinned
// staging buffers, chunk by chunk with an odd tail, into memory the caller
// chose (end_run_into) as well as into end_run's own vectors.
TEST_F(CudaGpu, LargeOutputsComeBackWholeThroughTheStagingBuffers) {
  std::vector<int32_t> x((size_t{70} << 20) / 4 + 5);  // two 32 MiB chunks and a tail
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<int32_t>(i * 7 % 1000003);
  ASSERT_TRUE(gpu_->build(program_).ok());
  ParamValues p = params(0);
  for (bool into : {true, false}) {
    ASSERT_TRUE(gpu_->begin_run(program_, p, partition(x)).ok());
    SectionBuffer state = section(program_.manifest.state, p);
    SectionBuffer agg = section(program_.manifest.aggregate, p);
    const int32_t offset = 11;
    std::memcpy(state.data(*state.find("offset")), &offset, 4);
    IterationStats stats;
    ASSERT_TRUE(gpu_->iterate(state, 0, &agg, &stats).ok());
    std::vector<int32_t> y(x.size(), -1);
    if (into) {
      const std::vector<uint64_t> sizes = gpu_->output_field_sizes();
      ASSERT_EQ(sizes, (std::vector<uint64_t>{0, x.size() * 4}));
      Status st = gpu_->end_run_into({nullptr, reinterpret_cast<char*>(y.data())});
      ASSERT_TRUE(st.ok()) << st.message();
    } else {
      auto out = gpu_->end_run(true);
      ASSERT_TRUE(out.ok()) << out.status().message();
      ASSERT_EQ((*out)[1].size(), x.size() * 4);
      std::memcpy(y.data(), (*out)[1].data(), (*out)[1].size());
    }
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_EQ(y[i], x[i] + offset) << i << (into ? " into" : "");
  }
}

// A run takes the state, aggregate and staging buffers the last one left:
// back-to-back runs of other sizes still give each its own answer.
TEST_F(CudaGpu, BackToBackRunsGiveTheirOwnAnswers) {
  ASSERT_TRUE(gpu_->build(program_).ok());
  for (int rows : {100003, 517, 100003, 1}) {
    std::vector<int32_t> x(static_cast<size_t>(rows));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<int32_t>(i * 7 % 1001) - rows % 13;
    ParamValues p = params(0);
    Status st = gpu_->begin_run(program_, p, partition(x));
    ASSERT_TRUE(st.ok()) << st.message();
    SectionBuffer state = section(program_.manifest.state, p);
    SectionBuffer agg = section(program_.manifest.aggregate, p);
    const int32_t offset = rows % 5;
    std::memcpy(state.data(*state.find("offset")), &offset, 4);
    std::memset(agg.bytes.data(), 0x5a, agg.bytes.size());
    ASSERT_TRUE(gpu_->iterate(state, 0, &agg, nullptr).ok());
    int64_t total = 0;
    for (int32_t v : x) total += v + offset;
    EXPECT_EQ(get<int64_t>(agg, "total"), total) << rows;
    ASSERT_TRUE(gpu_->end_run(false).ok());
  }
}

// Slices of the partition (iterate_rows), the grid-stride step included,
// fold to the aggregate of the whole and write each row once.
TEST_F(CudaGpu, SlicesOfThePartitionFoldToTheWhole) {
  std::vector<int32_t> x(70001);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<int32_t>(i % 1000) - 400;
  ASSERT_TRUE(gpu_->build(program_).ok());
  ParamValues p = params(0);
  ASSERT_TRUE(gpu_->begin_run(program_, p, partition(x)).ok());
  SectionBuffer state = section(program_.manifest.state, p);
  SectionBuffer whole = section(program_.manifest.aggregate, p);
  const int64_t cuts[] = {0, 0, 1, 40000, 70001};
  for (int k = 0; k + 1 < 5; ++k) {
    SectionBuffer part = section(program_.manifest.aggregate, p);
    IterationStats stats;
    Status st = gpu_->iterate_rows(state, 0, &part, &stats, cuts[k], cuts[k + 1] - cuts[k]);
    ASSERT_TRUE(st.ok()) << st.message();
    if (k == 0)
      whole = part;
    else
      fold_into(&whole, part);
  }
  int64_t total = 0;
  int32_t low = INT32_MAX;
  for (int32_t v : x) total += v, low = std::min(low, v);
  EXPECT_EQ(get<int64_t>(whole, "total"), total);
  EXPECT_EQ(get<int64_t>(whole, "ysum"), total);
  EXPECT_EQ(get<int32_t>(whole, "low"), low);
  auto out = gpu_->end_run(true);
  ASSERT_TRUE(out.ok()) << out.status().message();
  std::vector<int32_t> y(x.size());
  std::memcpy(y.data(), (*out)[1].data(), (*out)[1].size());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], x[i]) << i;
}

// Runs a faulting kernel, then a good run on the same executor.  Returns ""
// when the executor behaves, else what went wrong; `*outcome` says whether
// the GPU recovered in process or asked for a restart.
std::string fault_then_next_run(Executor* gpu, const ProgramImage& program, const ParamValues& bad,
                                const ParamValues& good, PartitionData data, std::string* outcome) {
  const Manifest& m = program.manifest;
  auto state = make_section(m.state, m, bad);
  auto agg = make_section(m.aggregate, m, bad);
  PartitionData again = data;
  Status st = gpu->begin_run(program, bad, std::move(data));
  if (!st.ok()) return "begin_run: " + st.message();
  IterationStats stats;
  st = gpu->iterate(*state, 0, &*agg, &stats);
  if (st.ok()) return "a faulting kernel did not fail the iteration";
  if (st.code() != Code::kRuntimeError || st.message().find("CUDA_ERROR_") == std::string::npos ||
      st.message().find("shift") == std::string::npos)
    return "unexpected fault message: " + st.message();
  if (gpu->iterate(*state, 0, &*agg, &stats).ok()) return "the failed run went on";
  if (gpu->end_run(true).ok()) return "end_run of a failed run gave outputs";
  st = gpu->begin_run(program, good, std::move(again));
  if (!st.ok()) {
    *outcome = "restart: " + st.message();
    if (st.code() == Code::kUnavailable && st.message().find("must restart") != std::string::npos)
      return "";
    return "after a fault: " + st.message();
  }
  st = gpu->iterate(*state, 0, &*agg, &stats);
  if (!st.ok()) return "iterate after recovery: " + st.message();
  int64_t total = 0;
  std::memcpy(&total, agg->data(*agg->find("total")), 8);
  if (total != 1000) return "wrong total after recovery: " + std::to_string(total);
  *outcome = "recovered in process";
  return gpu->end_run(false).ok() ? "" : "end_run after recovery failed";
}

// The child's side: runs the check, leaves the outcome in `report`, exits.
[[noreturn]] void fault_child(Executor* gpu, const ProgramImage& program, const ParamValues& bad,
                              const ParamValues& good, PartitionData data,
                              const std::string& report) {
  std::string outcome;
  std::string err = fault_then_next_run(gpu, program, bad, good, std::move(data), &outcome);
  if (std::FILE* f = std::fopen(report.c_str(), "w")) {
    std::fputs(outcome.c_str(), f);
    std::fclose(f);
  }
  std::fprintf(stderr, "%s\n", err.empty() ? "fault handled" : err.c_str());
  std::_Exit(err.empty() ? 0 : 1);
}

// A fault can spoil the CUDA driver for the whole process, so it runs in a
// child process of its own.
TEST_F(CudaGpu, KernelFaultFailsTheIterationAndTheNextRunRecoversOrAsksForRestart) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::string report = ::testing::TempDir() + "lizard-cuda-fault-outcome";
  std::remove(report.c_str());
  std::vector<int32_t> x(1000, 1);
  EXPECT_EXIT(fault_child(gpu_.get(), program_, params(1), params(0), partition(x), report),
              ::testing::ExitedWithCode(0), "fault handled");
  std::FILE* f = std::fopen(report.c_str(), "r");
  char buf[1024] = {0};
  if (f) {
    size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    std::fclose(f);
  }
  std::printf("kernel fault outcome: %s\n", buf);
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

// Kept input rows (exec/kept_rows.h): a run that names its rows by key gets
// them as uploaded, whatever the last run's kernels wrote into its copy, and
// kept rows give way to a run that needs their memory.
const char* kBumpYaml = R"(
sources: {cuda: kernel.cu}
dataset:
  x: {type: float32, shape: [rows]}
  scratch: {type: uint8, shape: [rows, scratch_width], input: false}
params:
  scratch_width: {type: int64, default: 0}
aggregate:
  total: {type: float64, reduce: sum}
iterate:
  - {kernel: bump, blocks: "sm_count * 4", block: 256}
)";

const char* kBumpKernel = R"(
#include "lizard_program.h"
extern "C" __global__ void bump(global_params_t params, dataset_t data, global_state_t state,
                                agg_res_t result) {
  double sum = 0;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < data.rows;
       i += (int64_t)gridDim.x * blockDim.x) {
    data.x[i] += 1.0f;
    sum += data.x[i];
  }
  atomicAdd(result.total, sum);
}
)";

std::unique_ptr<Executor> gpu_keeping(uint64_t bytes) {
  CudaOptions o;
  o.kept_rows_bytes = bytes;
  auto gpus = make_cuda_executors(o);
  EXPECT_TRUE(gpus.ok()) << gpus.status().message();
  return gpus.ok() ? std::move(gpus->front()) : nullptr;
}

// One iteration over rows 1, 1, ... (or as named by key); the total.
Result<double> bump_once(Executor* e, const ProgramImage& p, int64_t rows, const std::string& key,
                         bool send, int64_t scratch_width = 0) {
  LIZARD_ASSIGN_OR_RETURN(ParamValues params,
                          bind_params(p.manifest, {{"scratch_width", scratch_width}}));
  PartitionData d;
  d.rows = rows;
  d.fields.resize(2);
  d.shared.resize(2);
  d.shared[0] = {nullptr, 0, static_cast<size_t>(rows) * 4, key};
  if (send) {
    std::vector<float> ones(static_cast<size_t>(rows), 1.0f);
    d.fields[0].resize(ones.size() * 4);
    std::memcpy(d.fields[0].data(), ones.data(), d.fields[0].size());
  }
  LIZARD_RETURN_IF_ERROR(e->begin_run(p, params, std::move(d)));
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer state, make_section(p.manifest.state, p.manifest, params));
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer agg,
                          make_section(p.manifest.aggregate, p.manifest, params));
  LIZARD_RETURN_IF_ERROR(e->iterate(state, 0, &agg, nullptr));
  LIZARD_RETURN_IF_ERROR(e->end_run(false).status());
  double total = 0;
  std::memcpy(&total, agg.bytes.data(), sizeof total);
  return total;
}

TEST_F(CudaGpu, KeptRowsReachEachRunAsUploaded) {
  auto gpu = gpu_keeping(64 << 20);
  ASSERT_TRUE(gpu);
  ProgramImage p = make_test_program(kBumpYaml, {{"kernel.cu", kBumpKernel}});
  const int64_t rows = 1 << 20;
  for (bool send : {true, false, false}) {
    auto total = bump_once(gpu.get(), p, rows, "u1@0", send);
    ASSERT_TRUE(total.ok()) << total.status().message();
    EXPECT_EQ(*total, 2.0 * rows) << (send ? "sent" : "named");
    EXPECT_EQ(gpu->kept_rows(), std::vector<std::string>{"u1@0"});
  }
  auto unknown = bump_once(gpu.get(), p, rows, "never-sent", false);
  EXPECT_EQ(unknown.status().code(), Code::kNotFound) << unknown.status().message();
}

TEST_F(CudaGpu, KeptRowsGiveWayToARunThatNeedsTheMemory) {
  auto gpu = gpu_keeping(uint64_t{8} << 30);
  ASSERT_TRUE(gpu);
  ProgramImage p = make_test_program(kBumpYaml, {{"kernel.cu", kBumpKernel}});
  const int64_t rows = int64_t{1} << 30;  // 4 GiB of rows
  ASSERT_TRUE(bump_once(gpu.get(), p, rows, "big", true).ok());
  ASSERT_EQ(gpu->kept_rows(), std::vector<std::string>{"big"});
  // The free memory the GPU reports counts what it holds for a next run
  // (the 4 GiB of kept rows and the last run's 4 GiB field buffer) as free.
  // A run of 1024 rows whose scratch needs all of it but 1 GiB fits only
  // once both have gone.
  gpu->refresh_free_memory();
  const uint64_t free = gpu->info().free_memory;
  const int64_t width = static_cast<int64_t>((free - (uint64_t{1} << 30)) / 1024);
  auto total = bump_once(gpu.get(), p, 1024, "small", true, width);
  ASSERT_TRUE(total.ok()) << total.status().message();
  EXPECT_EQ(*total, 2.0 * 1024);
  EXPECT_EQ(gpu->kept_rows(), std::vector<std::string>{"small"});
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
