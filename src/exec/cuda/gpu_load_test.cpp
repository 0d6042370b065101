// GPU load telemetry on a real device (skipped without one, unless
// LIZARD_REQUIRE_GPU=1, which the `gpu` label sets).
#include "exec/cuda/gpu_load.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "exec/cuda/cuda_executor.h"

namespace lizard {
namespace {

bool gpu_required() {
  const char* req = std::getenv("LIZARD_REQUIRE_GPU");
  return req && std::string(req) == "1";
}

TEST(CudaExecutors, ReportTheirLoad) {
  auto gpus = make_cuda_executors(CudaOptions{});
  if (!gpus.ok()) {
    if (gpu_required()) FAIL() << "no CUDA device: " << gpus.status().message();
    GTEST_SKIP() << "no CUDA device: " << gpus.status().message();
  }
  const bool nvml = cuda::NvmlLibrary::load().ok();
  for (auto& e : *gpus) {
    e->refresh_load();
    const ExecutorInfo& info = e->info();
    EXPECT_GT(info.launch_delay_us, 0) << info.name;
    EXPECT_LT(info.launch_delay_us, 1e6) << info.name;
    if (nvml) {
      EXPECT_GE(info.utilization, 0) << info.name;
      EXPECT_LE(info.utilization, 100) << info.name;
    } else {
      EXPECT_EQ(info.utilization, -1) << "no NVML here, yet a utilisation";
    }
    EXPECT_TRUE(info.to_json().contains("launch_delay_us"));
  }
}

TEST(CudaExecutors, RankGpusOrdersEveryGpuOnce) {
  auto ranked = rank_gpus();
  if (!ranked.ok()) {
    if (gpu_required()) FAIL() << ranked.status().message();
    EXPECT_EQ(ranked.status().code(), Code::kUnavailable) << ranked.status().message();
    return;
  }
  auto loads = read_gpu_loads();
  ASSERT_TRUE(loads.ok()) << loads.status().message();
  for (const auto& l : *loads) {
    EXPECT_GT(l.free_memory, 0u);
    EXPECT_GT(l.weight, 0);
  }
  std::vector<int> sorted = *ranked;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> all(loads->size());
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(sorted, all);
}

}  // namespace
}  // namespace lizard
