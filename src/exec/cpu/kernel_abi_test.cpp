// The kernel library's ABI, called directly: 3-D grids and blocks, block
// ranges and the dynamic shared memory limit (the manifest's launches are 1-D).
#include <gtest/gtest.h>

#include "common/shared_library.h"
#include "exec/cpu/cpu_executor.h"
#include "exec/cpu/kernel_source.h"
#include "exec/host_compiler.h"
#include "program/codegen.h"

#include <thread>
#include <vector>

namespace lizard {
namespace {

// A kernel library built from a manifest and a kernel.cu, with the entry
// point of its kernel `k`.
struct KernelLibrary {
  Manifest manifest;
  bool fibers = false;
  SharedLibrary library;
  CpuKernelFn fn = nullptr;
};

void build(const std::string& yaml, const char* source, KernelLibrary* out) {
  auto m = parse_manifest(yaml, "config.yaml");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ProgramImage p;
  p.manifest = *m;
  p.header = generate_program_header(*m);
  p.sources["kernel.cu"] = source;
  auto plan = plan_cpu_build(p);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  auto so = HostCompiler(testing::TempDir() + "lizard-kernel-abi-test")
                .build_shared(plan->files, plan->units, plan->flags);
  ASSERT_TRUE(so.ok()) << so.status().message();
  auto lib = SharedLibrary::open(*so);
  ASSERT_TRUE(lib.ok()) << lib.status().message();
  out->manifest = *m;
  out->fibers = plan->fibers;
  out->library = std::move(lib).value();
  out->fn = out->library.symbol<CpuKernelFn>("lizard_cpu_kernel_k");
  ASSERT_NE(out->fn, nullptr);
}

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
  KernelLibrary k;
  ASSERT_NO_FATAL_FAILURE(build(
      "sources: {cuda: kernel.cu}\ndataset: {v: {type: int32, shape: [rows]}}\niterate: [k]\n",
      kKernel, &k));
  const Manifest* m = &k.manifest;
  const CpuKernelFn fn = k.fn;

  const unsigned blocks = 3 * 2 * 2, threads = 8 * 4 * 2;
  std::vector<int32_t> v(blocks * threads, -1);
  std::vector<uint8_t> dataset =
      pack_dataset(dataset_layout(*m), v.size(), 0, {reinterpret_cast<uint64_t>(v.data())});
  int32_t unused = 0;
  const void* args[4] = {&unused, dataset.data(), &unused, &unused};
  lizard_cpu_launch l{{3, 2, 2}, {8, 4, 2}, 0, 2, blocks, 0};
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

// Lanes and their fiber stacks persist on an OS thread from launch to launch:
// after a block fails (a trap, a divergent barrier) the waiting threads are
// abandoned and the next launch starts afresh, with more or fewer threads.
const char* kBarrierKernel = R"(
extern "C" __global__ void k(global_params_t p, dataset_t d, global_state_t, agg_res_t) {
  __shared__ int s[1024];
  const unsigned n = blockDim.x * blockDim.y * blockDim.z;
  const unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned bid = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  s[tid] = (int)tid;
  __syncthreads();
  if (p.mode == 1 && bid == 1 && tid == 3) __trap();
  if (p.mode == 2 && bid == 1 && tid < 5) __syncthreads();
  const int partner = __shfl_xor_sync(0xffffffffu, (int)tid, 1);
  const int mirrored = s[n - 1 - tid];
  __syncthreads();
  d.v[bid * n + tid] = mirrored * 1000 + partner;
}
)";

TEST(KernelAbi, LaunchesAfterAFailedBlockStartAfresh) {
  KernelLibrary k;
  ASSERT_NO_FATAL_FAILURE(
      build("sources: {cuda: kernel.cu}\nparams: {mode: {type: int32}}\n"
            "dataset: {v: {type: int32, shape: [rows]}}\niterate: [k]\n",
            kBarrierKernel, &k));
  ASSERT_TRUE(k.fibers);
  const Manifest* m = &k.manifest;
  const CpuKernelFn fn = k.fn;

  struct Launch {
    int mode;
    uint32_t block[3];
    const char* error;  // expected in the message, or null for success
  };
  const Launch launches[] = {
      {1, {64, 1, 1}, "__trap() called"},
      {0, {96, 1, 1}, nullptr},
      {2, {32, 2, 1}, "__syncthreads reached by 5 of 64 threads of block (1,0,0)"},
      {0, {48, 1, 1}, nullptr},
      {0, {4, 4, 2}, nullptr},
  };
  const unsigned blocks = 3;
  for (const Launch& launch : launches) {
    SCOPED_TRACE("mode " + std::to_string(launch.mode) + ", block of " +
                 std::to_string(launch.block[0] * launch.block[1] * launch.block[2]));
    const unsigned n = launch.block[0] * launch.block[1] * launch.block[2];
    auto params = bind_params(*m, {{"mode", launch.mode}});
    ASSERT_TRUE(params.ok()) << params.status().message();
    std::vector<uint8_t> packed = pack_params(params_layout(*m), *params);
    std::vector<int32_t> v(blocks * n, -1);
    std::vector<uint8_t> dataset =
        pack_dataset(dataset_layout(*m), v.size(), 0, {reinterpret_cast<uint64_t>(v.data())});
    int32_t unused = 0;
    const void* args[4] = {packed.data(), dataset.data(), &unused, &unused};
    lizard_cpu_launch l{
        {blocks, 1, 1}, {launch.block[0], launch.block[1], launch.block[2]}, 0, 0, blocks, 0};
    char err[256] = "";
    const int rc = fn(&l, args, err, sizeof err);
    if (launch.error) {
      EXPECT_NE(rc, 0);
      EXPECT_NE(std::string(err).find(launch.error), std::string::npos) << err;
      continue;
    }
    ASSERT_EQ(rc, 0) << err;
    for (unsigned b = 0; b < blocks; ++b)
      for (unsigned t = 0; t < n; ++t)
        ASSERT_EQ(v[b * n + t], static_cast<int>((n - 1 - t) * 1000 + (t ^ 1)))
            << "block " << b << " thread " << t;
  }
}

// Launches on two OS threads at once add into the same global memory; a
// solo launch (LIZARD_CPU_LAUNCH_SOLO: the executor runs it on one thread)
// adds with plain instructions, and the thread's next launch is atomic again.
TEST(KernelAbi, AtomicsArePlainOnlyInASoloLaunch) {
  KernelLibrary k;
  ASSERT_NO_FATAL_FAILURE(
      build("sources: {cuda: kernel.cu}\n"
            "dataset: {n: {type: int32, shape: [rows]}, f: {type: float32, shape: [rows]}}\n"
            "iterate: [k]\n",
            R"(
extern "C" __global__ void k(global_params_t, dataset_t d, global_state_t, agg_res_t) {
  atomicAdd(&d.n[0], 1);
  atomicAdd(&d.f[0], 1.0f);
}
)",
            &k));
  std::vector<int32_t> n(1, 0);
  std::vector<float> f(1, 0.0f);
  std::vector<uint8_t> dataset =
      pack_dataset(dataset_layout(k.manifest), 1, 0,
                   {reinterpret_cast<uint64_t>(n.data()), reinterpret_cast<uint64_t>(f.data())});
  int32_t unused = 0;
  const void* args[4] = {&unused, dataset.data(), &unused, &unused};
  const unsigned blocks = 4096, threads = 32, launches = 50;
  auto launch = [&](uint64_t flags, std::string* error) {
    lizard_cpu_launch l{{blocks, 1, 1}, {threads, 1, 1}, 0, 0, blocks, flags};
    char err[256] = "";
    if (k.fn(&l, args, err, sizeof err) != 0) *error = err;
  };
  std::string error;
  launch(LIZARD_CPU_LAUNCH_SOLO, &error);
  ASSERT_EQ(error, "");
  EXPECT_EQ(n[0], static_cast<int32_t>(blocks * threads));
  EXPECT_EQ(f[0], static_cast<float>(blocks * threads));

  // This thread ran the solo launch: were it still solo, the two would race.
  std::string other_error;
  std::thread other([&] {
    for (unsigned i = 0; i < launches; ++i) launch(0, &other_error);
  });
  for (unsigned i = 0; i < launches; ++i) launch(0, &error);
  other.join();
  ASSERT_EQ(error, "");
  ASSERT_EQ(other_error, "");
  const unsigned total = blocks * threads * (2 * launches + 1);
  EXPECT_EQ(n[0], static_cast<int32_t>(total));
  EXPECT_EQ(f[0], static_cast<float>(total));
}

}  // namespace
}  // namespace lizard
