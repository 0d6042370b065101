// The kernel library's ABI, called directly: 3-D grids and blocks, block
// ranges and the dynamic shared memory limit (the manifest's launches are 1-D).
#include <gtest/gtest.h>

#include "common/shared_library.h"
#include "exec/cpu/cpu_executor.h"
#include "exec/cpu/kernel_source.h"
#include "exec/host_compiler.h"
#include "program/codegen.h"

namespace lizard {
namespace {

const char* kKernel = R"(
extern "C" __global__ void k(global_params_t, dataset_t d, global_state_t, agg_res_t) {
  const unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned bid = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned n = blockDim.x * blockDim.y * blockDim.z;
  const int first_of_warp = __shfl_sync(0xffffffffu, (int)tid, 0);
  d.v[bid * n + tid] = (int)(bid * 1000 + tid) * 100 + (int)tid - first_of_warp;
}
)";

TEST(KernelAbi, ThreeDimensionalGridsBlocksAndRanges) {
  auto m = parse_manifest(
      "sources: {cuda: kernel.cu}\ndataset: {v: {type: int32, shape: [rows]}}\niterate: [k]\n",
      "config.yaml");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ProgramImage p;
  p.manifest = *m;
  p.header = generate_program_header(*m);
  p.sources["kernel.cu"] = kKernel;
  auto plan = plan_cpu_build(p);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  auto so = HostCompiler(testing::TempDir() + "lizard-kernel-abi-test")
                .build_shared(plan->files, plan->units, plan->flags);
  ASSERT_TRUE(so.ok()) << so.status().message();
  auto lib = SharedLibrary::open(*so);
  ASSERT_TRUE(lib.ok()) << lib.status().message();
  auto fn = lib->symbol<CpuKernelFn>("lizard_cpu_kernel_k");
  ASSERT_NE(fn, nullptr);

  const unsigned blocks = 3 * 2 * 2, threads = 8 * 4 * 2;
  std::vector<int32_t> v(blocks * threads, -1);
  std::vector<uint8_t> dataset =
      pack_dataset(dataset_layout(*m), v.size(), 0, {reinterpret_cast<uint64_t>(v.data())});
  int32_t unused = 0;
  const void* args[4] = {&unused, dataset.data(), &unused, &unused};
  lizard_cpu_launch_abi l{{3, 2, 2}, {8, 4, 2}, 0, 2, blocks};
  char err[256] = "";
  ASSERT_EQ(fn(&l, args, err, sizeof err), 0) << err;
  for (unsigned b = 0; b < blocks; ++b)
    for (unsigned t = 0; t < threads; ++t) {
      const int want = b < 2 ? -1 : static_cast<int>(b * 1000 + t) * 100 + static_cast<int>(t % 32);
      ASSERT_EQ(v[b * threads + t], want) << "block " << b << " thread " << t;
    }

  l.shared_bytes = uint64_t{1} << 40;
  EXPECT_NE(fn(&l, args, err, sizeof err), 0);
  EXPECT_NE(std::string(err).find("exceeds the CPU backend's limit"), std::string::npos) << err;
}

}  // namespace
}  // namespace lizard
