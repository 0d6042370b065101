#include "exec/cuda/cuda_driver.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "exec/cuda/cuda_executor.h"
#include "exec/cuda/nvrtc_library.h"

namespace lizard::cuda {
namespace {

TEST(CudaDriver, MissingLibraryIsUnavailable) {
  auto cu = CudaDriver::load_from({"/nonexistent/libcuda.so.1"});
  ASSERT_FALSE(cu.ok());
  EXPECT_EQ(cu.status().code(), Code::kUnavailable);
  EXPECT_NE(cu.status().message().find("/nonexistent/libcuda.so.1 not found"), std::string::npos)
      << cu.status().message();
}

TEST(CudaDriver, LibraryWithoutTheDriverApiIsUnavailable) {
  auto cu = CudaDriver::load_from({"libm.so.6"});
  ASSERT_FALSE(cu.ok());
  EXPECT_EQ(cu.status().code(), Code::kUnavailable);
  EXPECT_NE(cu.status().message().find("not a CUDA driver library"), std::string::npos)
      << cu.status().message();
}

TEST(CudaDriver, ToolkitStubIsUnavailable) {
  const std::string stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::filesystem::exists(stub)) GTEST_SKIP() << "no CUDA toolkit stub at " << stub;
  auto cu = CudaDriver::load_from({stub});
  ASSERT_FALSE(cu.ok());
  EXPECT_EQ(cu.status().code(), Code::kUnavailable);
  EXPECT_NE(cu.status().message().find("stub"), std::string::npos) << cu.status().message();
}

TEST(CudaDriver, StickyErrorsAreKernelFaults) {
  EXPECT_TRUE(CudaDriver::is_sticky(700));   // illegal address
  EXPECT_TRUE(CudaDriver::is_sticky(719));   // launch failed
  EXPECT_FALSE(CudaDriver::is_sticky(2));    // out of memory
  EXPECT_FALSE(CudaDriver::is_sticky(701));  // too many resources requested for launch
}

TEST(NvrtcLibrary, MissingLibraryIsUnavailableAndNamesThePlacesTried) {
  auto nv = NvrtcLibrary::load_from({"/nonexistent/libnvrtc.so.13", "/nowhere/libnvrtc.so"});
  ASSERT_FALSE(nv.ok());
  EXPECT_EQ(nv.status().code(), Code::kUnavailable);
  EXPECT_NE(nv.status().message().find("libnvrtc not found"), std::string::npos);
  EXPECT_NE(nv.status().message().find("/nowhere/libnvrtc.so"), std::string::npos);
}

TEST(NvrtcLibrary, CandidatesPreferTheToolkitDirAndVersionedNames) {
  auto c = NvrtcLibrary::candidates("/opt/cuda");
  ASSERT_GE(c.size(), 9u);
  EXPECT_EQ(c[0], "/opt/cuda/lib64/libnvrtc.so.13");
  EXPECT_EQ(c[1], "/opt/cuda/lib64/libnvrtc.so.12");
  EXPECT_EQ(c[3], "/opt/cuda/targets/x86_64-linux/lib/libnvrtc.so.13");
  EXPECT_EQ(c.back(), "libnvrtc.so");
}

// On a node without a GPU the factory explains why; on a GPU node it
// describes every device.
TEST(CudaExecutors, FactoryGivesExecutorsOrAReason) {
  auto gpus = make_cuda_executors(CudaOptions{});
  if (!gpus.ok()) {
    EXPECT_EQ(gpus.status().code(), Code::kUnavailable) << gpus.status().message();
    EXPECT_FALSE(gpus.status().message().empty());
    return;
  }
  ASSERT_FALSE(gpus->empty());
  for (const auto& e : *gpus) {
    EXPECT_EQ(e->info().kind, "cuda");
    EXPECT_EQ(e->info().arch.rfind("sm_", 0), 0u) << e->info().arch;
    EXPECT_GT(e->info().sm_count, 0);
    EXPECT_GT(e->info().total_memory, 0u);
    EXPECT_GT(e->info().weight, 0);
  }
}

TEST(CudaExecutors, UnknownGpuOrdinalIsRejected) {
  CudaOptions o;
  o.gpus = GpuSelection::of({4096});
  auto gpus = make_cuda_executors(o);
  ASSERT_FALSE(gpus.ok());
  // Without a driver the node is unavailable; with one, the ordinal is wrong.
  EXPECT_TRUE(gpus.status().code() == Code::kUnavailable ||
              gpus.status().code() == Code::kInvalidArgument)
      << gpus.status().message();
}

// count=1 and auto:1 each open one device (count=1 the first); a count
// beyond the node's devices is refused with how many it has.
TEST(CudaExecutors, CountAndMostFreeOpenThatManyDevices) {
  auto every = make_cuda_executors(CudaOptions{});
  if (!every.ok()) GTEST_SKIP() << every.status().message();
  const size_t n = every->size();
  every->clear();
  for (const char* text : {"count=1", "auto:1"}) {
    CudaOptions o;
    o.gpus = *parse_gpu_selection(text);
    auto one = make_cuda_executors(o);
    ASSERT_TRUE(one.ok()) << text << ": " << one.status().message();
    ASSERT_EQ(one->size(), 1u) << text;
    if (std::string(text) == "count=1") {
      EXPECT_EQ(one->front()->info().ordinal, 0);
    }
  }
  CudaOptions too_many;
  too_many.gpus = *parse_gpu_selection("count=" + std::to_string(n + 1));
  auto refused = make_cuda_executors(too_many);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("this node has " + std::to_string(n)),
            std::string::npos)
      << refused.status().message();
}

}  // namespace
}  // namespace lizard::cuda
