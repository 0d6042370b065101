// GPU tests of rows a CUDA executor reads from a file itself, through its
// pinned staging buffers (pinned_staging.h): several chunks and an odd tail
// land in the right place, and a file changed after it was located is
// refused.  They skip where there is no usable GPU, and fail instead when
// LIZARD_REQUIRE_GPU=1 (the `gpu` test label sets it).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <thread>

#include "dataset/npy.h"
#include "dataset/test_files.h"
#include "exec/cuda/cuda_executor.h"
#include "exec/cuda/test_program.h"
#include "exec/file_rows.h"

namespace lizard::cuda {
namespace {

// Copies x into the output y and sums x.
const char* kCopyYaml = R"(
sources: {cuda: kernel.cu}
dataset:
  x: {type: int32, shape: [rows]}
  y: {type: int32, shape: [rows], input: false, output: true}
aggregate:
  total: {type: int64, reduce: sum}
iterate:
  - kernel: copy
)";

const char* kCopyKernel = R"(
#include "lizard_program.h"
extern "C" __global__ void copy(global_params_t params, dataset_t data,
                                global_state_t state, agg_res_t result) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= data.rows) return;
  data.y[i] = data.x[i];
  atomicAdd((unsigned long long*)result.total, (unsigned long long)(long long)data.x[i]);
}
)";

// 100 MB and a bit: three 32 MiB chunks and an odd tail.
constexpr int64_t kRows = 25000003;

class CudaGpuFileRows : public ::testing::Test {
 protected:
  void SetUp() override {
    auto gpus = make_cuda_executors(CudaOptions{});
    if (!gpus.ok()) {
      const char* req = std::getenv("LIZARD_REQUIRE_GPU");
      if (req && std::string(req) == "1") FAIL() << "no CUDA device: " << gpus.status().message();
      GTEST_SKIP() << "no CUDA device: " << gpus.status().message();
    }
    gpu_ = std::move(gpus->front());
    program_ = make_test_program(kCopyYaml, {{"kernel.cu", kCopyKernel}});
    std::vector<int32_t> v(kRows);
    std::iota(v.begin(), v.end(), 1);
    path_ = dir_.write("x.npy", npy_bytes(DType::kInt32, {kRows}, v.data()));
  }

  Result<PartitionData> partition(int64_t first, int64_t rows) {
    PartitionData d;
    d.first_row = first;
    d.rows = rows;
    d.fields.resize(2);
    d.file_rows.resize(2);
    LIZARD_ASSIGN_OR_RETURN(
        d.file_rows[0], locate_file_rows(path_, FileFormat::kNpy, DType::kInt32, 1, first, rows));
    return d;
  }

  TempDir dir_;
  std::string path_;
  ProgramImage program_;
  std::unique_ptr<Executor> gpu_;
};

TEST_F(CudaGpuFileRows, TheRowsOfTheRangeReachTheDevice) {
  struct Range {
    int64_t first, rows;
  };
  for (Range r : {Range{0, kRows}, Range{12345, 9000001}, Range{kRows - 1, 1}}) {
    auto d = partition(r.first, r.rows);
    ASSERT_TRUE(d.ok()) << d.status().message();
    ParamValues params;
    ASSERT_TRUE(gpu_->begin_run(program_, params, std::move(d).value()).ok());
    auto state = make_section(program_.manifest.state, program_.manifest, params);
    auto agg = make_section(program_.manifest.aggregate, program_.manifest, params);
    ASSERT_TRUE(state.ok() && agg.ok());
    IterationStats stats;
    ASSERT_TRUE(gpu_->iterate(*state, 0, &*agg, &stats).ok());
    auto out = gpu_->end_run(true);
    ASSERT_TRUE(out.ok()) << out.status().message();
    const std::vector<uint8_t>& y = (*out)[1];
    ASSERT_EQ(y.size(), static_cast<size_t>(r.rows) * 4);
    std::vector<int32_t> want(static_cast<size_t>(r.rows));
    std::iota(want.begin(), want.end(), static_cast<int32_t>(r.first + 1));
    EXPECT_EQ(std::memcmp(y.data(), want.data(), y.size()), 0) << r.first << "+" << r.rows;
    int64_t total = 0;
    std::memcpy(&total, agg->bytes.data(), sizeof total);
    const int64_t a = r.first + 1, b = r.first + r.rows;
    EXPECT_EQ(total, (a + b) * r.rows / 2);
  }
}

TEST_F(CudaGpuFileRows, AFileChangedAfterItWasLocatedIsRefused) {
  auto d = partition(0, 1000);
  ASSERT_TRUE(d.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::vector<int32_t> v(kRows, 7);
  dir_.write("x.npy", npy_bytes(DType::kInt32, {kRows}, v.data()));
  Status st = gpu_->begin_run(program_, ParamValues{}, std::move(d).value());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("changed"), std::string::npos) << st.message();
  EXPECT_FALSE(gpu_->lost());
}

}  // namespace
}  // namespace lizard::cuda
