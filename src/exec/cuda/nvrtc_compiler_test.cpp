#include "exec/cuda/nvrtc_compiler.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "exec/cuda/test_program.h"

namespace lizard::cuda {
namespace {

namespace fs = std::filesystem;

const char* kYaml = R"(
info: {name: scale}
sources: {cuda: kernel.cu, headers: [twice.cuh]}
params:
  factor: {type: float32}
dataset:
  x: {type: float32, shape: [rows]}
aggregate:
  total: {type: float32, reduce: sum}
iterate:
  - kernel: scale
)";

const char* kKernel = R"(
#include "lizard_program.h"
#include "twice.cuh"
extern "C" __global__ void scale(global_params_t params, dataset_t data,
                                 global_state_t state, agg_res_t result) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= data.rows) return;
  float v = twice(data.x[i]) * params.factor;
  data.x[i] = v;
  atomicAdd(result.total, v);
}
)";

const char* kTwice = "__device__ inline float twice(float v) { return 2.0f * v; }\n";

class NvrtcCompilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cc = NvrtcCompiler::open("/usr/local/cuda", "");
    if (!cc.ok()) GTEST_SKIP() << "NVRTC unavailable: " << cc.status().message();
    cache_ =
        fs::temp_directory_path() /
        ("lizard-nvrtc-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(cache_);
  }
  void TearDown() override {
    if (!cache_.empty()) fs::remove_all(cache_);
  }
  fs::path cache_;
};

// Warming NVRTC up compiles a kernel of its own and keeps nothing: the
// cache directory stays empty, and a program's first build after it is still
// a compile of that program.
TEST_F(NvrtcCompilerTest, WarmingUpKeepsNothing) {
  auto cc = NvrtcCompiler::open("/usr/local/cuda", cache_.string());
  ASSERT_TRUE(cc.ok()) << cc.status().message();
  (*cc)->warm_up("sm_90");
  size_t entries = 0;
  if (fs::exists(cache_))
    for (const auto& e : fs::recursive_directory_iterator(cache_)) entries += e.is_regular_file();
  EXPECT_EQ(entries, 0u);
  ProgramImage p = make_test_program(kYaml, {{"kernel.cu", kKernel}, {"twice.cuh", kTwice}});
  auto first = (*cc)->compile(p, "sm_90");
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_FALSE(first->from_cache);
}

TEST_F(NvrtcCompilerTest, CompilesACubinForSm90WithTheProgramHeaders) {
  ProgramImage p = make_test_program(kYaml, {{"kernel.cu", kKernel}, {"twice.cuh", kTwice}});
  auto out = compile_for_arch(p, "sm_90");
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->arch, "sm_90");
  EXPECT_FALSE(out->from_cache);
  ASSERT_GT(out->cubin.size(), 4u);
  EXPECT_EQ(out->cubin.substr(0, 4),
            "\x7f"
            "ELF");
  EXPECT_NE(out->cubin.find("scale"), std::string::npos);
}

TEST_F(NvrtcCompilerTest, CompileErrorCarriesTheLog) {
  ProgramImage p = make_test_program(
      kYaml, {{"kernel.cu", std::string(kKernel) + "\nint broken = no_such_name;\n"},
              {"twice.cuh", kTwice}});
  auto out = compile_for_arch(p, "sm_90");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kCompileError);
  const std::string& msg = out.status().message();
  EXPECT_EQ(msg.rfind("kernel.cu: NVRTC (sm_90) failed:\n", 0), 0u) << msg;
  EXPECT_NE(msg.find("no_such_name"), std::string::npos) << msg;
}

TEST_F(NvrtcCompilerTest, MissingHeaderIsACompileError) {
  ProgramImage p = make_test_program(kYaml, {{"kernel.cu", kKernel}});
  auto out = compile_for_arch(p, "sm_90");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kCompileError);
  EXPECT_NE(out.status().message().find("twice.cuh"), std::string::npos) << out.status().message();
}

TEST_F(NvrtcCompilerTest, SecondCompileIsACacheHit) {
  ProgramImage p = make_test_program(kYaml, {{"kernel.cu", kKernel}, {"twice.cuh", kTwice}});
  auto first = compile_for_arch(p, "sm_90", "/usr/local/cuda", cache_.string());
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_FALSE(first->from_cache);
  // A new compiler, as after a restart, finds the cubin on disk.
  auto second = compile_for_arch(p, "sm_90", "/usr/local/cuda", cache_.string());
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_TRUE(second->from_cache);
  EXPECT_EQ(second->cubin, first->cubin);
  // Another architecture or another source is another entry.
  auto other_arch = compile_for_arch(p, "sm_80", "/usr/local/cuda", cache_.string());
  ASSERT_TRUE(other_arch.ok()) << other_arch.status().message();
  EXPECT_FALSE(other_arch->from_cache);
  p.sources["twice.cuh"] = "__device__ inline float twice(float v) { return v + v; }\n";
  auto edited = compile_for_arch(p, "sm_90", "/usr/local/cuda", cache_.string());
  ASSERT_TRUE(edited.ok()) << edited.status().message();
  EXPECT_FALSE(edited->from_cache);
}

// Options from LIZARD_NVRTC_OPTIONS reach NVRTC (a wrong one fails the
// build) and are part of the cache key: a build with them is not served
// one without them, nor the other way round.
TEST_F(NvrtcCompilerTest, EnvironmentOptionsReachNvrtcAndTheCacheKey) {
  ProgramImage p = make_test_program(kYaml, {{"kernel.cu", kKernel}, {"twice.cuh", kTwice}});
  auto plain = compile_for_arch(p, "sm_90", "/usr/local/cuda", cache_.string());
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  ::setenv("LIZARD_NVRTC_OPTIONS", " -lineinfo  -DTWICE_UNUSED=1 ", 1);
  auto with_options = compile_for_arch(p, "sm_90", "/usr/local/cuda", cache_.string());
  ::setenv("LIZARD_NVRTC_OPTIONS", "--no-such-nvrtc-option", 1);
  auto wrong = compile_for_arch(p, "sm_90", "/usr/local/cuda", cache_.string());
  ::unsetenv("LIZARD_NVRTC_OPTIONS");
  ASSERT_TRUE(with_options.ok()) << with_options.status().message();
  EXPECT_FALSE(with_options->from_cache);
  EXPECT_NE(with_options->cubin, plain->cubin);  // -lineinfo adds line tables
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("no-such-nvrtc-option"), std::string::npos)
      << wrong.status().message();
  auto again = compile_for_arch(p, "sm_90", "/usr/local/cuda", cache_.string());
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_TRUE(again->from_cache);
  EXPECT_EQ(again->cubin, plain->cubin);
}

TEST_F(NvrtcCompilerTest, RejectsAMalformedArch) {
  ProgramImage p = make_test_program(kYaml, {{"kernel.cu", kKernel}, {"twice.cuh", kTwice}});
  auto out = compile_for_arch(p, "compute_90");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kInvalidArgument);
}

TEST_F(NvrtcCompilerTest, ProgramWithoutItsCudaSourceIsRejected) {
  ProgramImage p = make_test_program(kYaml, {{"twice.cuh", kTwice}});
  auto out = compile_for_arch(p, "sm_90");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kInvalidArgument);
  EXPECT_NE(out.status().message().find("kernel.cu"), std::string::npos);
}

}  // namespace
}  // namespace lizard::cuda
