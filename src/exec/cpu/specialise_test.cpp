// The CPU backend compiles a program for each run's specialised param values
// and caches the builds in memory and on disk.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "exec/cpu/cpu_executor.h"
#include "program/codegen.h"

namespace lizard {
namespace {

namespace fs = std::filesystem;

// Column sums, with a row copied into a local array whose bound is `dims`:
// C++ accepts that only when `dims` is a compile-time constant.
const char* kKernel = R"(
#include "lizard_program.h"
template <int D> struct Row { float v[D]; };
extern "C" __global__ void column_sums(global_params_t params, dataset_t data,
                                       global_state_t state, agg_res_t result) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= data.rows) return;
  Row<params.dims> row;
  for (int j = 0; j < params.dims; ++j) row.v[j] = data.x[i * params.dims + j];
  for (int j = 0; j < params.dims; ++j) atomicAdd(&result.sums[j], row.v[j] * params.scale);
}
)";

std::string manifest_yaml(bool specialise, bool with_default) {
  return std::string("sources: {cuda: kernel.cu}\nparams:\n  dims: {type: int32") +
         (specialise ? ", specialize: true" : "") + (with_default ? ", default: 2" : "") +
         "}\n  scale: {type: float32, default: 1}\n"
         "dataset:\n  x: {type: float32, shape: [rows, dims]}\n"
         "aggregate:\n  sums: {type: float32, shape: [dims], reduce: sum}\n"
         "iterate:\n  - {kernel: column_sums, block: 32}\n";
}

ProgramImage make_program(const std::string& yaml) {
  auto m = parse_manifest(yaml, "config.yaml");
  EXPECT_TRUE(m.ok()) << m.status().message();
  ProgramImage p;
  p.manifest = *m;
  p.header = generate_program_header(*m);
  p.sources["kernel.cu"] = kKernel;
  p.hash = std::to_string(std::hash<std::string>()(yaml + kKernel));
  return p;
}

class CpuSpecialise : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_ = fs::path(::testing::TempDir()) /
             ("lizard-cpu-specialise-" +
              std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(cache_);
  }
  void TearDown() override { fs::remove_all(cache_); }

  std::unique_ptr<Executor> executor() {
    CpuExecutorOptions o;
    o.threads = 2;
    o.cache_dir = cache_.string();
    return make_cpu_executor(o);
  }

  // One iteration over `rows` rows where x[i][j] = i + 10 j; the column sums.
  Result<std::vector<float>> column_sums(Executor* e, const ProgramImage& p, int dims, int rows) {
    auto params = bind_params(p.manifest, {{"dims", dims}});
    if (!params.ok()) return params.status();
    PartitionData d;
    d.rows = rows;
    std::vector<float> x;
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < dims; ++j) x.push_back(static_cast<float>(i + 10 * j));
    d.fields.emplace_back(x.size() * sizeof(float));
    std::memcpy(d.fields[0].data(), x.data(), d.fields[0].size());
    LIZARD_RETURN_IF_ERROR(e->begin_run(p, *params, std::move(d)));
    auto state = make_section(p.manifest.state, p.manifest, *params);
    auto agg = make_section(p.manifest.aggregate, p.manifest, *params);
    IterationStats stats;
    Status st = e->iterate(*state, 0, &*agg, &stats);
    auto ended = e->end_run(false);
    LIZARD_RETURN_IF_ERROR(st);
    LIZARD_RETURN_IF_ERROR(ended.status());
    std::vector<float> sums(dims);
    std::memcpy(sums.data(), agg->bytes.data(), dims * sizeof(float));
    return sums;
  }

  static std::vector<float> expected(int dims, int rows) {
    std::vector<float> out;
    for (int j = 0; j < dims; ++j) out.push_back(rows * (rows - 1) / 2.0f + 10.0f * j * rows);
    return out;
  }

  fs::path cache_;
};

TEST_F(CpuSpecialise, AKernelNeedingAConstantBuildsOnlyWhenSpecialised) {
  auto plain = executor();
  Status st = plain->build(make_program(manifest_yaml(false, true)));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kCompileError);
  EXPECT_NE(st.message().find("kernel.cu: build failed for the CPU backend"), std::string::npos);

  auto e = executor();
  st = e->build(make_program(manifest_yaml(true, true)));
  EXPECT_TRUE(st.ok()) << st.message();
}

TEST_F(CpuSpecialise, ASpecialisedParamWithoutADefaultFailsRegistrationButRuns) {
  // Registration builds with runtime members where there is no default, so
  // the error reaches the user when the program is loaded.
  ProgramImage p = make_program(manifest_yaml(true, false));
  auto e = executor();
  Status st = e->build(p);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kCompileError);
  // A run has every value, so its build succeeds and says which values it baked in.
  auto sums = column_sums(e.get(), p, 3, 50);
  ASSERT_TRUE(sums.ok()) << sums.status().message();
  EXPECT_EQ(*sums, expected(3, 50));
}

TEST_F(CpuSpecialise, RunsReuseBuildsPerValueAndRecompileForANewOne) {
  ProgramImage p = make_program(manifest_yaml(true, true));
  auto e = executor();
  ASSERT_TRUE(e->build(p).ok());

  // The default value: the registration's build, from memory.
  auto sums = column_sums(e.get(), p, 2, 100);
  ASSERT_TRUE(sums.ok()) << sums.status().message();
  EXPECT_EQ(*sums, expected(2, 100));
  EXPECT_TRUE(e->run_compile_stats().cache_hit);
  EXPECT_EQ(e->run_compile_stats().compile_ms, 0);

  // A new value compiles and gives that value's answer.
  sums = column_sums(e.get(), p, 5, 100);
  ASSERT_TRUE(sums.ok()) << sums.status().message();
  EXPECT_EQ(*sums, expected(5, 100));
  EXPECT_FALSE(e->run_compile_stats().cache_hit);
  EXPECT_GT(e->run_compile_stats().compile_ms, 0);

  // The same value again: a cache hit.
  sums = column_sums(e.get(), p, 5, 40);
  ASSERT_TRUE(sums.ok()) << sums.status().message();
  EXPECT_EQ(*sums, expected(5, 40));
  EXPECT_TRUE(e->run_compile_stats().cache_hit);
  EXPECT_EQ(e->run_compile_stats().compile_ms, 0);

  // Another executor (a restarted worker) finds the build on disk.
  auto again = executor();
  sums = column_sums(again.get(), p, 5, 40);
  ASSERT_TRUE(sums.ok()) << sums.status().message();
  EXPECT_EQ(*sums, expected(5, 40));
  EXPECT_TRUE(again->run_compile_stats().cache_hit);
}

TEST_F(CpuSpecialise, ACompileErrorNamesTheValues) {
  ProgramImage p = make_program(manifest_yaml(true, true));
  p.sources["kernel.cu"] =
      std::string(kKernel) + "static_assert(global_params_t::dims != 7, \"seven is refused\");\n";
  auto e = executor();
  ASSERT_TRUE(e->build(p).ok());
  auto sums = column_sums(e.get(), p, 7, 10);
  ASSERT_FALSE(sums.ok());
  EXPECT_NE(sums.status().message().find("seven is refused"), std::string::npos);
  EXPECT_NE(sums.status().message().find("(compiled with the specialised params dims=7)"),
            std::string::npos)
      << sums.status().message();
}

TEST_F(CpuSpecialise, ProgramsWithoutSpecialisedParamsReportACacheHitAfterRegistration) {
  ProgramImage p = make_program(manifest_yaml(false, false));
  p.sources["kernel.cu"] =
      "#include \"lizard_program.h\"\n"
      "extern \"C\" __global__ void column_sums(global_params_t params, dataset_t data,\n"
      "    global_state_t state, agg_res_t result) {\n"
      "  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;\n"
      "  if (i >= data.rows) return;\n"
      "  for (int j = 0; j < params.dims; ++j) atomicAdd(&result.sums[j], data.x[i * params.dims + "
      "j]);\n"
      "}\n";
  auto e = executor();
  ASSERT_TRUE(e->build(p).ok());
  auto sums = column_sums(e.get(), p, 4, 64);
  ASSERT_TRUE(sums.ok()) << sums.status().message();
  EXPECT_EQ(*sums, expected(4, 64));
  EXPECT_TRUE(e->run_compile_stats().cache_hit);
}

TEST(CompileStats, CombineTakesTheSlowestAndHitsOnlyWhenAllHit) {
  EXPECT_TRUE(combine_compile_stats({}).cache_hit);
  CompileStats hit, miss;
  miss.cache_hit = false;
  miss.compile_ms = 120;
  hit.compile_ms = 0;
  CompileStats c = combine_compile_stats({hit, miss, hit});
  EXPECT_FALSE(c.cache_hit);
  EXPECT_EQ(c.compile_ms, 120);
  EXPECT_TRUE(combine_compile_stats({hit, hit}).cache_hit);
}

}  // namespace
}  // namespace lizard
