#include "exec/cpu/cpu_executor.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "program/codegen.h"
#include "program/reducers.h"

namespace lizard {
namespace {

ProgramImage make_program(const std::string& yaml, const std::string& kernel) {
  auto m = parse_manifest(yaml, "config.yaml");
  EXPECT_TRUE(m.ok()) << m.status().message();
  ProgramImage p;
  p.manifest = *m;
  p.header = generate_program_header(*m);
  p.sources["kernel.cu"] = kernel;
  p.hash = std::to_string(std::hash<std::string>()(yaml + kernel));
  return p;
}

std::unique_ptr<Executor> make_executor(int threads = 2) {
  CpuExecutorOptions o;
  o.threads = threads;
  o.cache_dir = testing::TempDir() + "lizard-cpu-executor-test";
  return make_cpu_executor(o);
}

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

template <typename T>
std::vector<T> values_of(const std::vector<uint8_t>& b) {
  std::vector<T> out(b.size() / sizeof(T));
  std::memcpy(out.data(), b.data(), b.size());
  return out;
}

template <typename T>
T scalar(const SectionBuffer& s, const std::string& name) {
  T v;
  std::memcpy(&v, s.data(*s.find(name)), sizeof v);
  return v;
}

// Runs `iterations` iterations over one partition; returns the last aggregate.
struct RunResult {
  Status status;
  SectionBuffer aggregate;
  std::vector<std::vector<uint8_t>> outputs;
};

RunResult run(Executor* e, const ProgramImage& p, const nlohmann::json& params_json,
              PartitionData data, int iterations) {
  RunResult r;
  auto params = bind_params(p.manifest, params_json);
  EXPECT_TRUE(params.ok()) << params.status().message();
  r.status = e->begin_run(p, *params, std::move(data));
  if (!r.status.ok()) return r;
  auto state = make_section(p.manifest.state, p.manifest, *params);
  auto agg = make_section(p.manifest.aggregate, p.manifest, *params);
  for (int i = 0; i < iterations && r.status.ok(); ++i) {
    IterationStats stats;
    r.status = e->iterate(*state, i, &*agg, &stats);
    if (r.status.ok()) {
      EXPECT_GE(stats.total_ms, stats.kernel_ms);
    }
  }
  auto out = e->end_run(true);
  if (r.status.ok()) r.status = out.status();
  if (out.ok()) r.outputs = std::move(out).value();
  r.aggregate = std::move(*agg);
  return r;
}

const char* kScaleYaml = R"(
sources: {cuda: kernel.cu}
params: {scale: {type: float32}}
dataset:
  x: {type: float32, shape: [rows]}
  y: {type: float32, shape: [rows], input: false, output: true}
  hits: {type: int32, shape: [rows], input: false, output: true}
aggregate:
  total: {type: float64, reduce: sum}
  biggest: {type: int32, reduce: max}
iterate:
  - {kernel: scale, block: 64}
)";

const char* kScaleKernel = R"(
extern "C" __global__ void scale(global_params_t params, dataset_t data, global_state_t state,
                                 agg_res_t result) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= data.rows) return;
  data.y[i] = data.x[i] * params.scale;
  data.hits[i] += 1;
  atomicAdd(result.total, (double)data.y[i]);
  atomicMax(result.biggest, (int)data.x[i]);
}
)";

TEST(CpuExecutor, InfoDescribesTheHost) {
  auto e = make_executor(3);
  EXPECT_EQ(e->info().kind, "cpu");
  EXPECT_EQ(e->info().sm_count, 3);
  EXPECT_EQ(e->info().weight, 3);
  EXPECT_FALSE(e->info().name.empty());
  EXPECT_GT(e->info().total_memory, 0u);
}

TEST(CpuExecutor, PlainKernelWritesFieldsAndAggregates) {
  auto e = make_executor();
  ProgramImage p = make_program(kScaleYaml, kScaleKernel);
  const int rows = 1000;
  std::vector<float> x(rows);
  std::iota(x.begin(), x.end(), 0.0f);
  PartitionData d;
  d.rows = rows;
  d.fields = {bytes_of(x), {}, {}};
  RunResult r = run(e.get(), p, {{"scale", 2.0}}, std::move(d), 3);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(scalar<double>(r.aggregate, "total"), 999000.0);
  EXPECT_EQ(scalar<int32_t>(r.aggregate, "biggest"), 999);
  ASSERT_EQ(r.outputs.size(), 3u);
  EXPECT_TRUE(r.outputs[0].empty());  // not an output field
  std::vector<float> y = values_of<float>(r.outputs[1]);
  std::vector<int32_t> hits = values_of<int32_t>(r.outputs[2]);
  ASSERT_EQ(y.size(), size_t{rows});
  for (int i = 0; i < rows; ++i) {
    ASSERT_EQ(y[i], 2.0f * i) << i;
    ASSERT_EQ(hits[i], 3) << i;  // values persist across iterations
  }
}

// A partition run in slices (iterate_rows) gives each slice's rows, with
// data.first_row advanced, and folding the slices' aggregates gives the
// aggregate of the whole partition.
TEST(CpuExecutor, SlicesOfThePartitionFoldToTheWhole) {
  auto e = make_executor();
  const char* kernel = R"(
extern "C" __global__ void scale(global_params_t params, dataset_t data, global_state_t state,
                                 agg_res_t result) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= data.rows) return;
  data.y[i] = data.x[i] * params.scale;
  data.hits[i] += (int)(data.first_row + i);
  atomicAdd(result.total, (double)data.y[i]);
  atomicMax(result.biggest, (int)data.x[i]);
}
)";
  ProgramImage p = make_program(kScaleYaml, kernel);
  const int rows = 1000;
  std::vector<float> x(rows);
  std::iota(x.begin(), x.end(), 0.0f);
  PartitionData d;
  d.first_row = 500;
  d.rows = rows;
  d.fields = {bytes_of(x), {}, {}};
  auto params = bind_params(p.manifest, {{"scale", 2.0}});
  ASSERT_TRUE(params.ok());
  ASSERT_TRUE(e->begin_run(p, *params, std::move(d)).ok());
  auto state = make_section(p.manifest.state, p.manifest, *params);
  auto whole = make_section(p.manifest.aggregate, p.manifest, *params);
  const int cuts[] = {0, 0, 1, 500, 1000};  // an empty slice, a one-row slice and two more
  for (int k = 0; k + 1 < 5; ++k) {
    auto part = make_section(p.manifest.aggregate, p.manifest, *params);
    IterationStats st;
    Status s = e->iterate_rows(*state, 0, &*part, &st, cuts[k], cuts[k + 1] - cuts[k]);
    ASSERT_TRUE(s.ok()) << s.message();
    if (k == 0)
      *whole = *part;
    else
      fold_into(&*whole, *part);
  }
  IterationStats st;
  EXPECT_FALSE(e->iterate_rows(*state, 0, &*whole, &st, 900, 101).ok());  // past the end
  auto out = e->end_run(true);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(scalar<double>(*whole, "total"), 999000.0);
  EXPECT_EQ(scalar<int32_t>(*whole, "biggest"), 999);
  std::vector<float> y = values_of<float>((*out)[1]);
  std::vector<int32_t> hits = values_of<int32_t>((*out)[2]);
  for (int i = 0; i < rows; ++i) {
    ASSERT_EQ(y[i], 2.0f * i) << i;
    ASSERT_EQ(hits[i], 500 + i) << i;  // each row once, knowing its global index
  }
}

TEST(CpuExecutor, BarriersSharedMemoryAndShuffles) {
  const char* yaml = R"(
sources: {cuda: kernel.cu}
dataset: {v: {type: int32, shape: [rows]}}
aggregate:
  sum: {type: int64, reduce: sum}
  warp_sum: {type: int64, reduce: sum}
iterate: [{kernel: reduce, block: 128}]
)";
  const char* kernel = R"(
extern "C" __global__ void reduce(global_params_t, dataset_t data, global_state_t,
                                  agg_res_t result) {
  __shared__ int s[128];
  unsigned t = threadIdx.x;
  int64_t i = blockIdx.x * (int64_t)blockDim.x + t;
  int x = i < data.rows ? data.v[i] : 0;
  s[t] = x;
  __syncthreads();
  for (unsigned o = blockDim.x / 2; o > 0; o >>= 1) {
    if (t < o) s[t] += s[t + o];
    __syncthreads();
  }
  if (t == 0) atomicAdd((unsigned long long*)result.sum, (unsigned long long)(long long)s[0]);
  int w = x;
  for (int o = 16; o > 0; o >>= 1) w += __shfl_down_sync(0xffffffffu, w, o);
  if ((t & 31) == 0)
    atomicAdd((unsigned long long*)result.warp_sum, (unsigned long long)(long long)w);
}
)";
  auto e = make_executor();
  ProgramImage p = make_program(yaml, kernel);
  const int rows = 1000;
  std::vector<int32_t> v(rows);
  int64_t expect = 0;
  for (int i = 0; i < rows; ++i) expect += v[i] = i % 7 - 3 + i / 100;
  PartitionData d;
  d.rows = rows;
  d.fields = {bytes_of(v)};
  RunResult r = run(e.get(), p, nullptr, std::move(d), 1);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(scalar<int64_t>(r.aggregate, "sum"), expect);
  EXPECT_EQ(scalar<int64_t>(r.aggregate, "warp_sum"), expect);
}

const char* kOneKernelYaml = R"(
sources: {cuda: kernel.cu}
dataset: {v: {type: int32, shape: [rows]}}
iterate: [{kernel: k, block: 64}]
)";

Status build_error(const std::string& kernel) {
  auto e = make_executor();
  return e->build(make_program(kOneKernelYaml, kernel));
}

TEST(CpuExecutor, SyntaxErrorShowsTheCompilerLog) {
  Status s = build_error(
      "extern \"C\" __global__ void k(global_params_t, dataset_t d, global_state_t, agg_res_t) {\n"
      "  int x = ;\n}\n");
  ASSERT_EQ(s.code(), Code::kCompileError);
  EXPECT_EQ(s.message().rfind("kernel.cu: build failed for the CPU backend:", 0), 0u)
      << s.message();
  EXPECT_NE(s.message().find("kernel.cu:2"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("error"), std::string::npos) << s.message();
}

// The log is the kernel's own diagnostics: nothing from lizard's headers
// comes before (or after) the user's error.
TEST(CpuExecutor, CompileErrorHoldsOnlyTheKernelsDiagnostics) {
  Status s = build_error(
      "extern \"C\" __global__ void k(global_params_t, dataset_t d, global_state_t, agg_res_t) {\n"
      "  int x = ;\n}\n");
  ASSERT_EQ(s.code(), Code::kCompileError);
  EXPECT_EQ(s.message().find("warning"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("cuda_cpu_"), std::string::npos) << s.message();
}

// A kernel name misspelt in the manifest is said in the manifest's terms,
// not as an error in the backend's generated entry file.
TEST(CpuExecutor, AKernelTheManifestNamesButTheSourceLacksIsNamed) {
  Status s = build_error(
      "extern \"C\" __global__ void kk(global_params_t, dataset_t d, global_state_t, agg_res_t) "
      "{}\n");
  ASSERT_EQ(s.code(), Code::kCompileError);
  EXPECT_EQ(s.message(),
            "kernel.cu: kernel 'k' named in iterate is not a __global__ function of kernel.cu "
            "(its kernels: kk); a kernel lizard launches is declared extern \"C\" __global__");
}

TEST(CpuExecutor, UnsupportedFeatureIsNamedAtBuildTime) {
  Status s = build_error(
      "extern \"C\" __global__ void k(global_params_t, dataset_t d, global_state_t, agg_res_t) {\n"
      "  cudaTextureObject_t t = 0; (void)t;\n}\n");
  ASSERT_EQ(s.code(), Code::kCompileError);
  EXPECT_NE(s.message().find("texture objects"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("not supported by the CPU backend"), std::string::npos);
}

Status run_error(const std::string& kernel) {
  auto e = make_executor();
  ProgramImage p = make_program(kOneKernelYaml, kernel);
  PartitionData d;
  d.rows = 256;
  d.fields = {std::vector<uint8_t>(256 * 4)};
  return run(e.get(), p, nullptr, std::move(d), 1).status;
}

TEST(CpuExecutor, DivergentBarrierIsAnError) {
  Status s = run_error(
      "extern \"C\" __global__ void k(global_params_t, dataset_t d, global_state_t, agg_res_t) {\n"
      "  if (threadIdx.x < 10) __syncthreads();\n"
      "  __syncthreads();\n"
      "  d.v[blockIdx.x * blockDim.x + threadIdx.x] = 1;\n}\n");
  ASSERT_EQ(s.code(), Code::kRuntimeError);
  EXPECT_NE(s.message().find("kernel 'k': __syncthreads reached by 10 of 64 threads of block ("),
            std::string::npos)
      << s.message();
}

TEST(CpuExecutor, ExitedThreadsDoNotHoldABarrier) {
  Status s = run_error(
      "extern \"C\" __global__ void k(global_params_t, dataset_t d, global_state_t, agg_res_t) {\n"
      "  if (threadIdx.x >= 10) return;\n"
      "  __syncthreads();\n"
      "  d.v[blockIdx.x * blockDim.x + threadIdx.x] = 1;\n}\n");
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(CpuExecutor, TrapFailsTheIteration) {
  Status s = run_error(
      "extern \"C\" __global__ void k(global_params_t, dataset_t d, global_state_t, agg_res_t) {\n"
      "  if (blockIdx.x == 2 && threadIdx.x == 5) __trap();\n}\n");
  ASSERT_EQ(s.code(), Code::kRuntimeError);
  EXPECT_NE(s.message().find("kernel 'k': __trap() called"), std::string::npos) << s.message();
}

TEST(CpuExecutor, WrongInputSizeIsRejected) {
  auto e = make_executor();
  ProgramImage p = make_program(kScaleYaml, kScaleKernel);
  auto params = bind_params(p.manifest, {{"scale", 1.0}});
  PartitionData d;
  d.rows = 10;
  d.fields = {std::vector<uint8_t>(12), {}, {}};
  Status s = e->begin_run(p, *params, std::move(d));
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "dataset field 'x' has 12 bytes for 10 rows, expected 40");
}

// The checks the CUDA backend shares (exec/partition.h) give the same errors here.
TEST(CpuExecutor, MisuseGetsTheSharedErrors) {
  auto e = make_executor();
  ProgramImage p = make_program(kScaleYaml, kScaleKernel);
  auto params = bind_params(p.manifest, {{"scale", 1.0}});
  auto state = make_section(p.manifest.state, p.manifest, *params);
  auto agg = make_section(p.manifest.aggregate, p.manifest, *params);
  Status s = e->iterate(*state, 0, &*agg, nullptr);
  EXPECT_EQ(s.code(), Code::kConflict);
  EXPECT_EQ(s.message(), "iterate without begin_run");
  EXPECT_EQ(e->end_run(false).status().message(), "end_run without begin_run");
  PartitionData d;
  d.rows = -1;
  d.fields.resize(3);
  EXPECT_EQ(e->begin_run(p, *params, std::move(d)).message(), "partition has a negative row count");
  d = PartitionData{};
  d.rows = 4;
  d.fields = {std::vector<uint8_t>(16), {}, {}};
  ASSERT_TRUE(e->begin_run(p, *params, std::move(d)).ok());
  EXPECT_EQ(e->iterate_rows(*state, 0, &*agg, nullptr, 2, 3).message(),
            "rows [2, 5) are not within the partition's 4");
  SectionBuffer small;
  EXPECT_EQ(e->iterate(*state, 0, &small, nullptr).message(),
            "state or aggregate buffer does not match the program's layout");
  EXPECT_TRUE(e->iterate_rows(*state, 0, &*agg, nullptr, 1, 3).ok());
  EXPECT_TRUE(e->end_run(false).ok());
}

// Kernels read the iteration they run in data.iteration, in a whole
// iteration and in slices of one alike; the generators see 0.
TEST(CpuExecutor, KernelsSeeTheIterationTheyRun) {
  const char* yaml = R"(
sources: {cuda: kernel.cu}
dataset:
  at_generate: {type: int64, shape: [rows], input: false, output: true}
  seen: {type: int64, shape: [rows], input: false, output: true}
aggregate:
  total: {type: int64, reduce: sum}
generate:
  - kernel: mark
iterate:
  - kernel: count
)";
  const char* kernel = R"(
#include "lizard_program.h"
extern "C" __global__ void mark(global_params_t params, dataset_t data, global_state_t state,
                                agg_res_t result) {
  for (const long long row : lizard::rows(data)) data.at_generate[row] = 100 + data.iteration;
}
extern "C" __global__ void count(global_params_t params, dataset_t data, global_state_t state,
                                 agg_res_t result) {
  for (const long long row : lizard::rows(data)) {
    data.seen[row] = data.iteration;
    atomicAdd((unsigned long long*)result.total, (unsigned long long)data.iteration);
  }
}
)";
  auto e = make_executor();
  ProgramImage p = make_program(yaml, kernel);
  PartitionData d;
  d.rows = 10;
  d.fields.resize(2);
  d.generators = {"mark"};
  auto params = bind_params(p.manifest, nlohmann::json::object());
  ASSERT_TRUE(params.ok());
  Status begun = e->begin_run(p, *params, std::move(d));
  ASSERT_TRUE(begun.ok()) << begun.message();
  auto state = make_section(p.manifest.state, p.manifest, *params);
  auto agg = make_section(p.manifest.aggregate, p.manifest, *params);
  for (int64_t it = 0; it < 3; ++it) {
    ASSERT_TRUE(e->iterate(*state, it, &*agg, nullptr).ok());
    EXPECT_EQ(scalar<int64_t>(*agg, "total"), 10 * it) << it;
  }
  ASSERT_TRUE(e->iterate_rows(*state, 7, &*agg, nullptr, 2, 3).ok());  // a slice
  EXPECT_EQ(scalar<int64_t>(*agg, "total"), 3 * 7);
  ASSERT_TRUE(e->iterate(*state, 8, &*agg, nullptr).ok());  // the whole again, after a slice
  EXPECT_EQ(scalar<int64_t>(*agg, "total"), 10 * 8);
  auto out = e->end_run(true);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(values_of<int64_t>((*out)[0]), std::vector<int64_t>(10, 100));
  EXPECT_EQ(values_of<int64_t>((*out)[1]), std::vector<int64_t>(10, 8));
}

}  // namespace
}  // namespace lizard
