// The CUDA backend compiles a program with NVRTC for each run's specialised
// param values.  The NVRTC tests need no GPU; the CudaGpuSpecialise tests
// skip without one, and fail instead when LIZARD_REQUIRE_GPU=1 (the `gpu`
// test label sets it).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "exec/cuda/cuda_executor.h"
#include "exec/cuda/nvrtc_compiler.h"
#include "exec/cuda/test_program.h"
#include "exec/program_variant.h"

namespace lizard::cuda {
namespace {

namespace fs = std::filesystem;

const char* kYaml = R"(
sources: {cuda: kernel.cu}
params:
  dims: {type: int32, specialize: true, default: 2}
dataset:
  x: {type: float32, shape: [rows, dims]}
aggregate:
  sums: {type: float32, shape: [dims], reduce: sum}
iterate:
  - {kernel: column_sums, block: 128}
)";

// The row goes into a local array whose bound is `dims`: a constant only
// when specialised.
const char* kKernel = R"(
#include "lizard_program.h"
template <int D> struct Row { float v[D]; };
extern "C" __global__ void column_sums(global_params_t params, dataset_t data,
                                       global_state_t state, agg_res_t result) {
  static_assert(params.dims > 0, "dims is a positive constant");
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= data.rows) return;
  Row<params.dims> row;
#pragma unroll
  for (int j = 0; j < params.dims; ++j) row.v[j] = data.x[i * params.dims + j];
#pragma unroll
  for (int j = 0; j < params.dims; ++j) atomicAdd(&result.sums[j], row.v[j]);
}
)";

ParamValues dims_param(const ProgramImage& p, int dims) {
  auto v = bind_params(p.manifest, {{"dims", dims}});
  EXPECT_TRUE(v.ok()) << v.status().message();
  return v.ok() ? *v : ParamValues{};
}

class NvrtcSpecialise : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_ = fs::temp_directory_path() /
             ("lizard-nvrtc-specialise-" +
              std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(cache_);
    auto cc = NvrtcCompiler::open("/usr/local/cuda", cache_.string());
    if (!cc.ok()) GTEST_SKIP() << "NVRTC unavailable: " << cc.status().message();
    cc_ = *cc;
    program_ = make_test_program(kYaml, {{"kernel.cu", kKernel}});
  }
  void TearDown() override { fs::remove_all(cache_); }

  fs::path cache_;
  std::shared_ptr<const NvrtcCompiler> cc_;
  ProgramImage program_;
};

TEST_F(NvrtcSpecialise, CompilesOnlyWithTheValueBakedIn) {
  auto plain = cc_->compile(program_, "sm_90");
  ASSERT_FALSE(plain.ok());
  EXPECT_EQ(plain.status().code(), Code::kCompileError);
  auto defaults = cc_->compile(variant_for_build(program_).image, "sm_90");
  EXPECT_TRUE(defaults.ok()) << defaults.status().message();
  auto five = cc_->compile(variant_for_run(program_, dims_param(program_, 5)).image, "sm_90");
  ASSERT_TRUE(five.ok()) << five.status().message();
  EXPECT_FALSE(five->from_cache);
}

TEST_F(NvrtcSpecialise, CachesEachValueOnDisk) {
  const ProgramImage five = variant_for_run(program_, dims_param(program_, 5)).image;
  const ProgramImage six = variant_for_run(program_, dims_param(program_, 6)).image;
  ASSERT_TRUE(cc_->compile(five, "sm_90").ok());
  auto again = cc_->compile(five, "sm_90");
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->from_cache);
  auto other = cc_->compile(six, "sm_90");
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->from_cache);
}

// A first-tier build is an entry of its own: the quick one runs ptxas at
// -O1, the fast one NVRTC's fast-compile level too; each is cached apart
// from the optimised build, and none serves for another.
TEST_F(NvrtcSpecialise, AQuickBuildIsCachedApartFromTheOptimisedOne) {
  const ProgramImage five = variant_for_run(program_, dims_param(program_, 5)).image;
  auto has = [](const std::vector<std::string>& o, const char* option) {
    return std::find(o.begin(), o.end(), option) != o.end();
  };
  const auto fast_options = cc_->options("sm_90", BuildTier::kFast);
  const auto quick_options = cc_->options("sm_90", BuildTier::kQuick);
  const auto full_options = cc_->options("sm_90");
  EXPECT_TRUE(has(fast_options, "-Ofc=mid") && has(fast_options, "-Xptxas=-O1"));
  EXPECT_TRUE(!has(quick_options, "-Ofc=mid") && has(quick_options, "-Xptxas=-O1"));
  EXPECT_TRUE(!has(full_options, "-Ofc=mid") && !has(full_options, "-Xptxas=-O1"));
  auto fast = cc_->compile(five, "sm_90", BuildTier::kFast);
  ASSERT_TRUE(fast.ok()) << fast.status().message();
  EXPECT_TRUE(cc_->cached(five, "sm_90", BuildTier::kFast));
  EXPECT_FALSE(cc_->cached(five, "sm_90", BuildTier::kQuick));

  auto quick = cc_->compile(five, "sm_90", BuildTier::kQuick);
  ASSERT_TRUE(quick.ok()) << quick.status().message();
  EXPECT_FALSE(quick->from_cache);
  EXPECT_TRUE(cc_->cached(five, "sm_90", BuildTier::kQuick));
  EXPECT_FALSE(cc_->cached(five, "sm_90"));

  auto full = cc_->compile(five, "sm_90");
  ASSERT_TRUE(full.ok()) << full.status().message();
  EXPECT_FALSE(full->from_cache);
  EXPECT_NE(full->cubin, quick->cubin);
  auto quick_again = cc_->compile(five, "sm_90", BuildTier::kQuick);
  ASSERT_TRUE(quick_again.ok());
  EXPECT_TRUE(quick_again->from_cache);
  EXPECT_EQ(quick_again->cubin, quick->cubin);
}

class CudaGpuSpecialise : public ::testing::Test {
 protected:
  void SetUp() override {
    auto gpus = make_cuda_executors(CudaOptions{});
    if (!gpus.ok()) {
      const char* req = std::getenv("LIZARD_REQUIRE_GPU");
      if (req && std::string(req) == "1") FAIL() << "no CUDA device: " << gpus.status().message();
      GTEST_SKIP() << "no CUDA device: " << gpus.status().message();
    }
    gpu_ = std::move(gpus->front());
    // A fresh executor without a disk cache (CudaOptions has no cache_dir).
    program_ = make_test_program(kYaml, {{"kernel.cu", kKernel}});
  }

  // The rows x[i][j] = i % 1000 + j.
  static PartitionData rows_of(int dims, int rows) {
    PartitionData d;
    d.rows = rows;
    std::vector<float> x;
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < dims; ++j) x.push_back(static_cast<float>(i % 1000 + j));
    d.fields.emplace_back(x.size() * sizeof(float));
    std::memcpy(d.fields[0].data(), x.data(), d.fields[0].size());
    return d;
  }

  // Column sums of rows_of(dims, rows).
  Result<std::vector<float>> column_sums(int dims, int rows) {
    ParamValues p = dims_param(program_, dims);
    LIZARD_RETURN_IF_ERROR(gpu_->begin_run(program_, p, rows_of(dims, rows)));
    auto state = make_section(program_.manifest.state, program_.manifest, p);
    auto agg = make_section(program_.manifest.aggregate, program_.manifest, p);
    IterationStats stats;
    Status st = gpu_->iterate(*state, 0, &*agg, &stats);
    auto ended = gpu_->end_run(false);
    LIZARD_RETURN_IF_ERROR(st);
    LIZARD_RETURN_IF_ERROR(ended.status());
    std::vector<float> sums(dims);
    std::memcpy(sums.data(), agg->bytes.data(), dims * sizeof(float));
    return sums;
  }

  // Replaces the executor with one that caches in `cache` (emptied first),
  // and returns a compiler that looks into that cache.
  Result<std::shared_ptr<const NvrtcCompiler>> use_a_cache(const fs::path& cache) {
    fs::remove_all(cache);
    CudaOptions o;
    o.cache_dir = cache.string();
    LIZARD_ASSIGN_OR_RETURN(auto gpus, make_cuda_executors(o));
    gpu_ = std::move(gpus.front());
    return NvrtcCompiler::open("/usr/local/cuda", cache.string());
  }

  static std::vector<float> expected(int dims, int rows) {
    std::vector<double> s(dims, 0.0);
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < dims; ++j) s[j] += i % 1000 + j;
    return std::vector<float>(s.begin(), s.end());
  }

  std::unique_ptr<Executor> gpu_;
  ProgramImage program_;
};

TEST_F(CudaGpuSpecialise, EachValueCompilesOnceAndGivesItsAnswer) {
  ASSERT_TRUE(gpu_->build(program_).ok());
  const int rows = 20000;
  auto sums = column_sums(2, rows);  // the default: built at registration
  ASSERT_TRUE(sums.ok()) << sums.status().message();
  EXPECT_EQ(*sums, expected(2, rows));
  EXPECT_TRUE(gpu_->run_compile_stats().cache_hit);

  sums = column_sums(7, rows);
  ASSERT_TRUE(sums.ok()) << sums.status().message();
  EXPECT_EQ(*sums, expected(7, rows));
  EXPECT_FALSE(gpu_->run_compile_stats().cache_hit);
  EXPECT_GT(gpu_->run_compile_stats().compile_ms, 0);

  sums = column_sums(7, rows / 2);
  ASSERT_TRUE(sums.ok()) << sums.status().message();
  EXPECT_EQ(*sums, expected(7, rows / 2));
  EXPECT_TRUE(gpu_->run_compile_stats().cache_hit);
  EXPECT_EQ(gpu_->run_compile_stats().compile_ms, 0);
}

// A run whose values have no optimised build begins on the quick build and
// gives the same sums; once the optimised build has compiled, the next
// iteration runs on it (still the same sums), and a later run of those
// values begins on it, waiting for no compile.
TEST_F(CudaGpuSpecialise, ARunBeginsOnTheQuickBuildAndSwitchesToTheOptimisedOne) {
  const fs::path cache = fs::temp_directory_path() / "lizard-quick-build-test";
  auto cc = use_a_cache(cache);
  ASSERT_TRUE(cc.ok()) << cc.status().message();
  const int dims = 11, rows = 30000;
  const ParamValues p = dims_param(program_, dims);
  const ProgramImage optimised = variant_for_run(program_, p).image;
  ASSERT_TRUE(gpu_->begin_run(program_, p, rows_of(dims, rows)).ok());
  EXPECT_TRUE(gpu_->run_compile_stats().quick_build);
  EXPECT_FALSE(gpu_->run_compile_stats().cache_hit);
  auto state = make_section(program_.manifest.state, program_.manifest, p);
  auto agg = make_section(program_.manifest.aggregate, program_.manifest, p);
  auto sums_of = [&] {
    std::vector<float> sums(dims);
    std::memcpy(sums.data(), agg->bytes.data(), dims * sizeof(float));
    return sums;
  };
  IterationStats stats;
  ASSERT_TRUE(gpu_->iterate(*state, 0, &*agg, &stats).ok());
  EXPECT_EQ(sums_of(), expected(dims, rows));

  // The optimised build lands in the host's cache; the executor takes it up
  // at the iteration after its compile ends.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool switched = stats.switched_build;
  for (int it = 1; !switched && std::chrono::steady_clock::now() < deadline; ++it) {
    if (!(*cc)->cached(optimised, gpu_->info().arch))
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(gpu_->iterate(*state, it, &*agg, &stats).ok());
    EXPECT_EQ(sums_of(), expected(dims, rows)) << "iteration " << it;
    switched = stats.switched_build;
  }
  EXPECT_TRUE(switched);
  ASSERT_TRUE(gpu_->end_run(false).ok());

  auto again = column_sums(dims, rows / 3);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(*again, expected(dims, rows / 3));
  EXPECT_FALSE(gpu_->run_compile_stats().quick_build);
  EXPECT_TRUE(gpu_->run_compile_stats().cache_hit);
  gpu_.reset();
  fs::remove_all(cache);
}

// A partition too large for the fast build begins on the optimised build,
// compiled for it: no quick build is made (its compile is no shorter), and
// the sums are those of the rows.
TEST_F(CudaGpuSpecialise, ALargePartitionBeginsOnTheOptimisedBuild) {
  const fs::path cache = fs::temp_directory_path() / "lizard-large-partition-test";
  auto cc = use_a_cache(cache);
  ASSERT_TRUE(cc.ok()) << cc.status().message();
  const int dims = 64;
  const int rows = static_cast<int>(kFastBuildMaxBytes / (dims * sizeof(float))) + 1;
  auto sums = column_sums(dims, rows);
  ASSERT_TRUE(sums.ok()) << sums.status().message();
  EXPECT_FALSE(gpu_->run_compile_stats().quick_build);
  EXPECT_FALSE(gpu_->run_compile_stats().cache_hit);
  EXPECT_GT(gpu_->run_compile_stats().compile_ms, 0);
  const std::vector<float> want = expected(dims, rows);
  // Float atomics over a million rows of about 500: rounding only (a few
  // parts in 10^4 of sums near 5e8), where a lost or doubled row would be 1e-6.
  for (int j = 0; j < dims; ++j) EXPECT_NEAR((*sums)[j], want[j], 1e-3 * want[j]) << "column " << j;
  const ProgramImage image =
      kernel_set(variant_for_run(program_, dims_param(program_, dims)), KernelSet::kIterate).image;
  const std::string arch = gpu_->info().arch;
  EXPECT_TRUE((*cc)->cached(image, arch));
  EXPECT_FALSE((*cc)->cached(image, arch, BuildTier::kQuick));
  EXPECT_FALSE((*cc)->cached(image, arch, BuildTier::kFast));
  gpu_.reset();
  fs::remove_all(cache);
}

// A registration's build is the fast one (of the iterate kernels) when the
// optimised one is not in the host's cache; the optimised build follows in
// the background, and a run of the defaults then begins on whichever is
// ready, with the same sums.
TEST_F(CudaGpuSpecialise, ARegistrationBuildsTheQuickBuildAndTheOptimisedFollows) {
  const fs::path cache = fs::temp_directory_path() / "lizard-quick-registration-test";
  auto cc = use_a_cache(cache);
  ASSERT_TRUE(cc.ok()) << cc.status().message();
  const ProgramImage defaults = kernel_set(variant_for_build(program_), KernelSet::kIterate).image;
  const std::string arch = gpu_->info().arch;
  ASSERT_TRUE(gpu_->build(program_).ok());
  EXPECT_TRUE((*cc)->cached(defaults, arch, BuildTier::kFast));
  for (int i = 0; i < 600 && !(*cc)->cached(defaults, arch); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE((*cc)->cached(defaults, arch));
  auto sums = column_sums(2, 4000);
  ASSERT_TRUE(sums.ok()) << sums.status().message();
  EXPECT_EQ(*sums, expected(2, 4000));
  EXPECT_TRUE(gpu_->run_compile_stats().cache_hit);
  gpu_.reset();
  fs::remove_all(cache);
}

// With quick builds off, a run waits for its optimised build.
TEST_F(CudaGpuSpecialise, WithQuickBuildsOffARunWaitsForTheOptimisedBuild) {
  CudaOptions o;
  o.quick_builds = false;
  auto gpus = make_cuda_executors(o);
  ASSERT_TRUE(gpus.ok()) << gpus.status().message();
  gpu_ = std::move(gpus->front());
  auto sums = column_sums(13, 5000);
  ASSERT_TRUE(sums.ok()) << sums.status().message();
  EXPECT_EQ(*sums, expected(13, 5000));
  EXPECT_FALSE(gpu_->run_compile_stats().quick_build);
  EXPECT_FALSE(gpu_->run_compile_stats().cache_hit);
}

}  // namespace
}  // namespace lizard::cuda
