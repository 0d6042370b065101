// kmeans_gpu: times the k-means assign kernel (kernel.cu beside this file)
// through CudaExecutor on GPU 0, against the floor set by the device's own
// copy bandwidth measured in the same run.
//
//   kmeans_gpu [--n=16000000] [--iters=20] [--dir=bench/kmeans_gpu]   (v1/: an earlier kernel)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "exec/cuda/cuda_driver.h"
#include "exec/cuda/cuda_executor.h"
#include "program/bundle.h"
#include "program/codegen.h"

using namespace lizard;

namespace {

constexpr int kK = 16;
constexpr int kD = 32;

struct Args {
  int64_t n = 16000000;
  int iters = 20;
  std::string dir = LIZARD_KMEANS_GPU_DIR;
};

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s.rfind("--n=", 0) == 0)
      a.n = std::stoll(s.substr(4));
    else if (s.rfind("--iters=", 0) == 0)
      a.iters = std::stoi(s.substr(8));
    else if (s.rfind("--dir=", 0) == 0)
      a.dir = s.substr(6);
  }
  return a;
}

Result<ProgramImage> load_program(const std::string& dir) {
  LIZARD_ASSIGN_OR_RETURN(ProgramBundle bundle, read_program_dir(dir));
  return make_program_image(bundle);
}

// Points around kK random centres, generated on all cores.
std::vector<float> make_points(int64_t n) {
  std::vector<float> centres(kK * kD);
  uint64_t s0 = 0x9e3779b97f4a7c15ull;
  auto next = [](uint64_t& s) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  };
  for (auto& c : centres) c = static_cast<float>((next(s0) >> 40) * (1.0 / (1 << 24)) * 20 - 10);
  std::vector<float> pts(static_cast<size_t>(n) * kD);
  const unsigned T = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> th;
  for (unsigned t = 0; t < T; ++t)
    th.emplace_back([&, t] {
      uint64_t s = 0x2545f4914f6cdd1dull * (t + 1);
      for (int64_t i = t; i < n; i += T) {
        const int c = static_cast<int>(next(s) % kK);
        for (int d = 0; d < kD; ++d) {
          uint64_t r = next(s);  // sum of 4 uniforms: roughly normal, sd about 1.15
          double u =
              ((r & 0xffff) + ((r >> 16) & 0xffff) + ((r >> 32) & 0xffff) + (r >> 48)) / 65536.0 -
              2.0;
          pts[i * kD + d] = centres[c * kD + d] + static_cast<float>(2 * u);
        }
      }
    });
  for (auto& x : th) x.join();
  return pts;
}

// Host reference of one assign step, in double precision.
void reference(const std::vector<float>& pts, const std::vector<float>& cent,
               std::vector<double>* sums, std::vector<int64_t>* counts) {
  const int64_t n = static_cast<int64_t>(pts.size() / kD);
  const unsigned T = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::vector<double>> ts(T, std::vector<double>(kK * kD));
  std::vector<std::vector<int64_t>> tc(T, std::vector<int64_t>(kK));
  std::vector<std::thread> th;
  for (unsigned t = 0; t < T; ++t)
    th.emplace_back([&, t] {
      for (int64_t i = t; i < n; i += T) {
        const float* x = &pts[i * kD];
        int best = 0;
        double bd = INFINITY;
        for (int k = 0; k < kK; ++k) {
          double d2 = 0;
          for (int d = 0; d < kD; ++d) {
            double e = double(x[d]) - cent[k * kD + d];
            d2 += e * e;
          }
          if (d2 < bd) bd = d2, best = k;
        }
        tc[t][best]++;
        for (int d = 0; d < kD; ++d) ts[t][best * kD + d] += x[d];
      }
    });
  for (auto& x : th) x.join();
  sums->assign(kK * kD, 0);
  counts->assign(kK, 0);
  for (unsigned t = 0; t < T; ++t) {
    for (int i = 0; i < kK * kD; ++i) (*sums)[i] += ts[t][i];
    for (int k = 0; k < kK; ++k) (*counts)[k] += tc[t][k];
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Device-to-device copy bandwidth of GPU 0 (bytes read + written per second).
Result<double> copy_bandwidth(size_t bytes) {
  using namespace lizard::cuda;
  LIZARD_ASSIGN_OR_RETURN(auto cu, CudaDriver::load());
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  LIZARD_RETURN_IF_ERROR(cu->check(cu->cuDeviceGet(&dev, 0), "cuDeviceGet"));
  LIZARD_RETURN_IF_ERROR(cu->check(cu->cuDevicePrimaryCtxRetain(&ctx, dev), "retain"));
  LIZARD_RETURN_IF_ERROR(cu->check(cu->cuCtxSetCurrent(ctx), "cuCtxSetCurrent"));
  CUdeviceptr a = 0, b = 0;
  CUstream s = nullptr;
  CUevent e0 = nullptr, e1 = nullptr;
  LIZARD_RETURN_IF_ERROR(cu->check(cu->cuMemAlloc(&a, bytes), "cuMemAlloc"));
  LIZARD_RETURN_IF_ERROR(cu->check(cu->cuMemAlloc(&b, bytes), "cuMemAlloc"));
  LIZARD_RETURN_IF_ERROR(cu->check(cu->cuMemsetD8(a, 1, bytes), "cuMemsetD8"));
  LIZARD_RETURN_IF_ERROR(cu->check(cu->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "stream"));
  LIZARD_RETURN_IF_ERROR(cu->check(cu->cuEventCreate(&e0, 0), "event"));
  LIZARD_RETURN_IF_ERROR(cu->check(cu->cuEventCreate(&e1, 0), "event"));
  std::vector<double> ms;
  for (int r = 0; r < 12; ++r) {
    cu->cuEventRecord(e0, s);
    cu->cuMemcpyDtoDAsync(b, a, bytes, s);
    cu->cuEventRecord(e1, s);
    LIZARD_RETURN_IF_ERROR(cu->check(cu->cuEventSynchronize(e1), "copy"));
    float t = 0;
    cu->cuEventElapsedTime(&t, e0, e1);
    if (r >= 2) ms.push_back(t);
  }
  cu->cuEventDestroy(e0);
  cu->cuEventDestroy(e1);
  cu->cuStreamDestroy(s);
  cu->cuMemFree(a);
  cu->cuMemFree(b);
  cu->cuDevicePrimaryCtxRelease(dev);
  return 2.0 * bytes / (median(ms) * 1e-3);
}

int fail(const Status& st) {
  std::fprintf(stderr, "kmeans_gpu: %s\n", st.message().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  CudaOptions o;
  o.gpus = GpuSelection::of({0});
  auto gpus = make_cuda_executors(o);
  if (!gpus.ok()) return fail(gpus.status());
  Executor& gpu = *gpus->front();
  const ExecutorInfo& info = gpu.info();
  std::printf("device: %s, %s, %d SMs, %.0f MHz, %.1f GiB, driver %s\n", info.name.c_str(),
              info.arch.c_str(), info.sm_count, info.clock_khz / 1e3,
              info.total_memory / 1073741824.0, info.driver.c_str());

  auto program = load_program(args.dir);
  if (!program.ok()) return fail(program.status());
  auto t0 = std::chrono::steady_clock::now();
  if (Status st = gpu.build(*program); !st.ok()) return fail(st);
  auto params = bind_params(program->manifest, {{"k", kK}, {"dims", kD}});
  if (!params.ok()) return fail(params.status());
  std::vector<float> pts = make_points(args.n);
  std::printf("points: %lld x %d float32 (%.2f GB), generated in %.1f s\n",
              static_cast<long long>(args.n), kD, pts.size() * 4 / 1e9,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());

  PartitionData data;
  data.rows = args.n;
  data.fields.resize(1);
  data.fields[0].resize(pts.size() * 4);
  std::memcpy(data.fields[0].data(), pts.data(), data.fields[0].size());
  t0 = std::chrono::steady_clock::now();
  if (Status st = gpu.begin_run(*program, *params, std::move(data)); !st.ok()) return fail(st);
  std::printf(
      "begin_run (allocate + upload): %.1f ms\n",
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());

  auto state = make_section(program->manifest.state, program->manifest, *params);
  auto agg = make_section(program->manifest.aggregate, program->manifest, *params);
  if (!state.ok() || !agg.ok()) return fail(state.ok() ? agg.status() : state.status());
  std::vector<float> cent(pts.begin(), pts.begin() + kK * kD);  // first k points
  std::vector<double> kernel_ms, total_ms;
  double rel_err = -1;
  int64_t count_diff = -1;
  for (int it = 0; it <= args.iters; ++it) {
    std::memcpy(state->bytes.data(), cent.data(), cent.size() * 4);
    IterationStats stats;
    if (Status st = gpu.iterate(*state, &*agg, &stats); !st.ok()) return fail(st);
    const float* sums = reinterpret_cast<const float*>(agg->bytes.data());
    const int64_t* counts =
        reinterpret_cast<const int64_t*>(agg->bytes.data() + agg->slots[1].offset);
    if (it == 0) {  // check the first step against the host, then warm-up is over
      std::vector<double> rs;
      std::vector<int64_t> rc;
      reference(pts, cent, &rs, &rc);
      double num = 0, den = 0;
      for (int i = 0; i < kK * kD; ++i) {
        num += (sums[i] - rs[i]) * (sums[i] - rs[i]);
        den += rs[i] * rs[i];
      }
      rel_err = std::sqrt(num / den);
      count_diff = 0;
      for (int k = 0; k < kK; ++k) count_diff += std::llabs(counts[k] - rc[k]);
    } else {
      kernel_ms.push_back(stats.kernel_ms);
      total_ms.push_back(stats.total_ms);
    }
    for (int k = 0; k < kK; ++k)
      if (counts[k] > 0)
        for (int d = 0; d < kD; ++d) cent[k * kD + d] = sums[k * kD + d] / counts[k];
  }
  if (auto out = gpu.end_run(false); !out.ok()) return fail(out.status());

  auto bw = copy_bandwidth(size_t{2} << 30);
  if (!bw.ok()) return fail(bw.status());
  const double bytes = static_cast<double>(args.n) * kD * 4;
  const double floor_ms = bytes / *bw * 1e3;
  const double k_ms = median(kernel_ms);
  std::printf("check vs host (float64), first step: sums rel err %.2e, |count diff| %lld\n",
              rel_err, static_cast<long long>(count_diff));
  std::printf("device copy bandwidth (read+write): %.0f GB/s\n", *bw / 1e9);
  std::printf("%-34s %10s\n",
              ("per iteration (median of " + std::to_string(args.iters) + ")").c_str(), "ms");
  std::printf("%-34s %10.3f\n", "assign kernel", k_ms);
  std::printf("%-34s %10.3f\n", "iterate() incl. transfers", median(total_ms));
  std::printf("%-34s %10.3f\n", "floor: bytes read / copy bw", floor_ms);
  std::printf("kernel at %.0f%% of the floor; reads %.0f GB/s\n", 100 * floor_ms / k_ms,
              bytes / (k_ms * 1e-3) / 1e9);
  const bool ok = rel_err >= 0 && rel_err < 1e-3 && count_diff <= args.n / 100000;
  std::printf("%s\n", ok ? "CHECK PASSED" : "CHECK FAILED");
  return ok ? 0 : 2;
}
