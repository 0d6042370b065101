// kmeans_gpu: the benchmark of record for kernels.  Runs examples/kmeans,
// exactly as users register it, through CudaExecutor on GPU 0 for every N and
// (K, D) asked for: the points come from the program's own `blobs` generator
// (on the device), the run starts from the first K points, and every
// iteration is a full Lloyd step (assign kernel on the device, centroid update
// on the host).  Prints the median time per iteration against a floor, the
// bytes the kernel must move (points read, labels written) over the device's
// copy bandwidth measured in the same run, and writes one JSON line per
// configuration for torch_lloyd.py, which times PyTorch on the same points
// (gpu_run.sh runs both).
//
//   kmeans_gpu [--sizes=65536,1048576,16777216,67108864] [--shapes=16x32,64x8,256x64]
//              [--iters=20] [--seed=7] [--dir=examples/kmeans] [--json=FILE]
//              [--tf32=1]      (the example's TF32 distances)
//              [--backend=cpu]   (the CPU backend instead, to check results; no floor)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "exec/cpu/cpu_executor.h"
#include "exec/cuda/cuda_driver.h"
#include "exec/cuda/cuda_executor.h"
#include "program/bundle.h"
#include "program/codegen.h"

using namespace lizard;
using nlohmann::json;

namespace {

struct Shape {
  int k = 0, d = 0;
};

struct Args {
  std::vector<int64_t> sizes = {65536, 1 << 20, 1 << 24, 1 << 26};
  std::vector<Shape> shapes = {{16, 32}, {64, 8}, {256, 64}};
  int iters = 20;
  uint64_t seed = 7;
  std::string dir = LIZARD_KMEANS_EXAMPLE_DIR;
  std::string json_path;
  bool cpu = false;
  int tf32 = 0;  // the example's `tf32` param: TF32 distances
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, sep);)
    if (!part.empty()) out.push_back(part);
  return out;
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto value = [&](const char* key) {
      const std::string k = std::string(key) + "=";
      return s.rfind(k, 0) == 0 ? s.substr(k.size()) : std::string();
    };
    if (auto v = value("--sizes"); !v.empty()) {
      a.sizes.clear();
      for (const auto& n : split(v, ',')) a.sizes.push_back(std::stoll(n));
    } else if (auto v = value("--shapes"); !v.empty()) {
      a.shapes.clear();
      for (const auto& kd : split(v, ','))
        a.shapes.push_back(
            {std::stoi(kd.substr(0, kd.find('x'))), std::stoi(kd.substr(kd.find('x') + 1))});
    } else if (auto v = value("--iters"); !v.empty()) {
      a.iters = std::stoi(v);
    } else if (auto v = value("--tf32"); !v.empty()) {
      a.tf32 = std::stoi(v);
    } else if (auto v = value("--seed"); !v.empty()) {
      a.seed = std::stoull(v);
    } else if (auto v = value("--dir"); !v.empty()) {
      a.dir = v;
    } else if (auto v = value("--json"); !v.empty()) {
      a.json_path = v;
    } else if (auto v = value("--backend"); !v.empty()) {
      a.cpu = v == "cpu";
    }
  }
  return a;
}

// The `blobs` generator of examples/kmeans, on the host.
uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
float unit_float(uint64_t h) {
  return static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
}
float blob_value(uint64_t seed, uint64_t row, int k, int j) {
  const uint64_t blob = row % static_cast<uint64_t>(k);
  const float centre = 10.0f * unit_float(mix64(seed ^ mix64(blob * 1000003ull + j)));
  const float noise = unit_float(mix64(seed + mix64(row * 64ull + j))) - 0.5f;
  return centre + noise;
}

// One assign step on the host, in double precision, over generated rows.
void reference_step(uint64_t seed, int64_t n, Shape s, const std::vector<float>& cent,
                    std::vector<double>* sums, std::vector<int64_t>* counts) {
  const unsigned T = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::vector<double>> ts(T, std::vector<double>(size_t(s.k) * s.d));
  std::vector<std::vector<int64_t>> tc(T, std::vector<int64_t>(s.k));
  std::vector<std::thread> th;
  for (unsigned t = 0; t < T; ++t)
    th.emplace_back([&, t] {
      std::vector<float> x(s.d);
      for (int64_t r = t; r < n; r += T) {
        for (int j = 0; j < s.d; ++j) x[j] = blob_value(seed, r, s.k, j);
        int best = 0;
        double bd = INFINITY;
        for (int c = 0; c < s.k; ++c) {
          double d2 = 0;
          for (int j = 0; j < s.d; ++j) {
            const double e = double(x[j]) - cent[size_t(c) * s.d + j];
            d2 += e * e;
          }
          if (d2 < bd) bd = d2, best = c;
        }
        tc[t][best]++;
        for (int j = 0; j < s.d; ++j) ts[t][size_t(best) * s.d + j] += x[j];
      }
    });
  for (auto& x : th) x.join();
  sums->assign(size_t(s.k) * s.d, 0);
  counts->assign(s.k, 0);
  for (unsigned t = 0; t < T; ++t) {
    for (size_t i = 0; i < sums->size(); ++i) (*sums)[i] += ts[t][i];
    for (int c = 0; c < s.k; ++c) (*counts)[c] += tc[t][c];
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

// One configuration: generate, iterate, time.  Returns its JSON record.
Result<json> run_one(Executor& gpu, const ProgramImage& program, const Args& a, int64_t n, Shape s,
                     double bandwidth) {
  json given{{"k", s.k}, {"dims", s.d}};
  if (a.tf32) given["tf32"] = a.tf32;
  LIZARD_ASSIGN_OR_RETURN(ParamValues params, bind_params(program.manifest, given));
  PartitionData data;
  data.rows = n;
  data.fields.resize(program.manifest.dataset.size());
  data.generators = {"blobs"};
  data.generate_seed = a.seed;
  auto t0 = std::chrono::steady_clock::now();
  LIZARD_RETURN_IF_ERROR(gpu.begin_run(program, params, std::move(data)));
  const double begin_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const CompileStats compile = gpu.run_compile_stats();

  LIZARD_ASSIGN_OR_RETURN(SectionBuffer state,
                          make_section(program.manifest.state, program.manifest, params));
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer agg,
                          make_section(program.manifest.aggregate, program.manifest, params));
  const FieldSlot* cslot = state.find("centroids");
  const FieldSlot* sums_slot = agg.find("sums");
  const FieldSlot* counts_slot = agg.find("counts");
  if (!cslot || !sums_slot || !counts_slot)
    return invalid_argument(a.dir + ": expected state.centroids, aggregate.sums and .counts");
  std::vector<float> cent(size_t(s.k) * s.d);
  for (int c = 0; c < s.k; ++c)
    for (int j = 0; j < s.d; ++j) cent[size_t(c) * s.d + j] = blob_value(a.seed, c, s.k, j);
  const std::vector<float> start = cent;

  std::vector<double> kernel_ms, total_ms, sums0;
  std::vector<int64_t> counts0;
  for (int it = 0; it <= a.iters; ++it) {
    std::memcpy(state.data(*cslot), cent.data(), cent.size() * 4);
    IterationStats stats;
    LIZARD_RETURN_IF_ERROR(gpu.iterate(state, it, &agg, &stats));
    const float* sums = reinterpret_cast<const float*>(agg.data(*sums_slot));
    const int64_t* counts = reinterpret_cast<const int64_t*>(agg.data(*counts_slot));
    if (it == 0) {  // the first step is checked (and is the warm-up)
      sums0.assign(sums, sums + cent.size());
      counts0.assign(counts, counts + s.k);
    } else {
      kernel_ms.push_back(stats.kernel_ms);
      total_ms.push_back(stats.total_ms);
    }
    for (int c = 0; c < s.k; ++c)
      if (counts[c] > 0)
        for (int j = 0; j < s.d; ++j)
          cent[size_t(c) * s.d + j] = sums[size_t(c) * s.d + j] / counts[c];
  }
  LIZARD_RETURN_IF_ERROR(gpu.end_run(false).status());

  json rec{{"n", n},
           {"k", s.k},
           {"d", s.d},
           {"seed", a.seed},
           {"tf32", a.tf32},
           {"iters", a.iters},
           {"kernel_ms", median(kernel_ms)},
           {"iterate_ms", median(total_ms)},
           {"begin_run_ms", begin_ms},
           {"compile_ms", compile.compile_ms},
           {"centroids0", start},
           {"sums0", sums0},
           {"counts0", counts0}};
  const double bytes = double(n) * (s.d + 1) * 4;  // points read, labels written
  rec["floor_ms"] = bytes / bandwidth * 1e3;
  int64_t total = 0;
  for (int64_t c : counts0) total += c;
  rec["counts_total_ok"] = total == n;
  if (n <= (int64_t{1} << 20)) {  // small enough to check on the host
    std::vector<double> rs;
    std::vector<int64_t> rc;
    reference_step(a.seed, n, s, start, &rs, &rc);
    double num = 0, den = 0;
    for (size_t i = 0; i < rs.size(); ++i) {
      num += (sums0[i] - rs[i]) * (sums0[i] - rs[i]);
      den += rs[i] * rs[i];
    }
    int64_t diff = 0;
    for (int c = 0; c < s.k; ++c) diff += std::llabs(counts0[c] - rc[c]);
    rec["host_sums_rel_err"] = std::sqrt(num / std::max(den, 1e-300));
    rec["host_count_diff"] = diff;
  }
  return rec;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  std::vector<std::unique_ptr<Executor>> executors;
  if (args.cpu) {
    executors.push_back(make_cpu_executor(CpuExecutorOptions{}));
  } else {
    CudaOptions o;
    o.gpus = GpuSelection::of({0});
    o.quick_builds = false;  // the kernels timed are the optimised ones
    auto gpus = make_cuda_executors(o);
    if (!gpus.ok()) return fail(gpus.status());
    executors = std::move(gpus).value();
  }
  Executor& gpu = *executors.front();
  const ExecutorInfo& info = gpu.info();
  std::printf("device: %s, %s, %d SMs, %.0f MHz, %.1f GiB, driver %s\n", info.name.c_str(),
              info.arch.c_str(), info.sm_count, info.clock_khz / 1e3,
              info.total_memory / 1073741824.0, info.driver.c_str());
  auto bundle = read_program_dir(args.dir);
  if (!bundle.ok()) return fail(bundle.status());
  auto program = make_program_image(*bundle);
  if (!program.ok()) return fail(program.status());
  auto bw = args.cpu ? Result<double>(1e300) : copy_bandwidth(size_t{2} << 30);
  if (!bw.ok()) return fail(bw.status());
  std::printf("device copy bandwidth (read + write): %.0f GB/s\n", *bw / 1e9);

  std::ofstream jsonl;
  if (!args.json_path.empty()) jsonl.open(args.json_path);
  std::printf("%10s %4s %3s %10s %10s %10s %8s %9s  %s\n", "N", "K", "D", "kernel ms", "iterate ms",
              "floor ms", "% floor", "compile", "check");
  bool ok = true;
  for (const Shape& s : args.shapes) {
    for (int64_t n : args.sizes) {
      auto rec = run_one(gpu, *program, args, n, s, *bw);
      if (!rec.ok()) return fail(rec.status());
      json& r = *rec;
      r["device"] = info.name;
      r["copy_gbps"] = *bw / 1e9;
      std::string check = r["counts_total_ok"].get<bool>() ? "counts sum to N" : "COUNTS WRONG";
      if (r.contains("host_sums_rel_err")) {
        const bool good = r["host_sums_rel_err"].get<double>() < 1e-4 &&
                          r["host_count_diff"].get<int64_t>() <= std::max<int64_t>(2, n / 100000);
        check += good ? ", matches host" : ", DIFFERS FROM HOST";
        ok = ok && good;
      }
      ok = ok && r["counts_total_ok"].get<bool>();
      std::printf("%10lld %4d %3d %10.3f %10.3f %10.3f %7.0f%% %7.0fms  %s\n",
                  static_cast<long long>(n), s.k, s.d, r["kernel_ms"].get<double>(),
                  r["iterate_ms"].get<double>(), r["floor_ms"].get<double>(),
                  100 * r["floor_ms"].get<double>() / r["kernel_ms"].get<double>(),
                  r["compile_ms"].get<double>(), check.c_str());
      std::fflush(stdout);
      if (jsonl) jsonl << r.dump() << "\n" << std::flush;
    }
  }
  std::printf("%s\n", ok ? "CHECK PASSED" : "CHECK FAILED");
  return ok ? 0 : 2;
}
