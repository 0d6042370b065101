#include "first_tier/measure.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "common/shared_library.h"
#include "exec/compile_cache.h"
#include "exec/cuda/cuda_driver.h"
#include "exec/cuda/cuda_executor.h"
#include "exec/cuda/nvrtc_compiler.h"
#include "exec/program_variant.h"
#include "program/bundle.h"
#include "program/device_library.h"
#include "program/layout.h"

namespace lizard::first_tier {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Case {
  std::string dir;
  json params;
};

Result<Case> case_of(const std::string& name) {
  int k = 0, d = 0;
  if (std::sscanf(name.c_str(), "kmeans%dx%d", &k, &d) == 2)
    return Case{LIZARD_EXAMPLES_DIR "/kmeans", json{{"k", k}, {"dims", d}}};
  if (std::sscanf(name.c_str(), "logreg%d", &d) == 1)
    return Case{LIZARD_EXAMPLES_DIR "/logreg", json{{"dims", d}}};
  return invalid_argument("unknown case '" + name + "'");
}

// The NVRTC options a candidate adds to the optimised build's.
std::string extra_options(const std::string& candidate) {
  std::string c = candidate.rfind("whole_", 0) == 0 ? candidate.substr(6) : candidate;
  if (c == "xO2") return "-Xptxas=-O2";
  if (c == "xO1") return "-Xptxas=-O1";
  if (c == "min") return "-Ofc=min";
  if (c == "min_xO1") return "-Ofc=min -Xptxas=-O1";
  if (c == "mid") return "-Ofc=mid";
  if (c == "mid_xO1") return "-Ofc=mid -Xptxas=-O1";
  return "";
}

// NVRTC to PTX for `arch`'s virtual architecture, with `opts` otherwise.
Result<std::string> compile_ptx(const cuda::NvrtcLibrary& nv, const ProgramImage& p,
                                std::vector<std::string> opts, const std::string& arch) {
  for (auto& o : opts)
    if (o == "-arch=" + arch) o = "-arch=compute_" + arch.substr(3);
  LIZARD_ASSIGN_OR_RETURN(SharedLibrary lib, SharedLibrary::open(nv.path()));
  auto get_size = lib.symbol<int (*)(cuda::nvrtcProgram, size_t*)>("nvrtcGetPTXSize");
  auto get_ptx = lib.symbol<int (*)(cuda::nvrtcProgram, char*)>("nvrtcGetPTX");
  if (!get_size || !get_ptx) return unavailable("this NVRTC has no nvrtcGetPTX");
  std::vector<std::string> names{"lizard_program.h"}, texts{p.header};
  for (const auto& [name, text] : device_library_files()) {
    names.push_back(name);
    texts.push_back(std::string(text));
  }
  std::vector<const char*> np, tp, op;
  for (size_t i = 0; i < names.size(); ++i) np.push_back(names[i].c_str());
  for (size_t i = 0; i < texts.size(); ++i) tp.push_back(texts[i].c_str());
  for (const auto& o : opts) op.push_back(o.c_str());
  cuda::nvrtcProgram prog = nullptr;
  nv.nvrtcCreateProgram(&prog, p.sources.at(p.manifest.cuda_source).c_str(), "kernel.cu",
                        int(np.size()), tp.data(), np.data());
  const int r = nv.nvrtcCompileProgram(prog, int(op.size()), op.data());
  std::string ptx;
  size_t n = 0;
  if (r == 0 && get_size(prog, &n) == 0) {
    ptx.resize(n);
    get_ptx(prog, ptx.data());
  }
  nv.nvrtcDestroyProgram(&prog);
  if (ptx.empty()) return compile_error("NVRTC to PTX failed");
  return ptx;
}

// The driver's JIT of `ptx` at CU_JIT_OPTIMIZATION_LEVEL `level`, into a
// cubin for the current context's device.
Result<std::string> jit_link(const std::string& ptx, int level) {
  LIZARD_ASSIGN_OR_RETURN(SharedLibrary lib, SharedLibrary::open_first({"libcuda.so.1"}));
  using State = void*;
  auto create = lib.symbol<int (*)(unsigned, int*, void**, State*)>("cuLinkCreate_v2");
  auto add = lib.symbol<int (*)(State, int, void*, size_t, const char*, unsigned, int*, void**)>(
      "cuLinkAddData_v2");
  auto complete = lib.symbol<int (*)(State, void**, size_t*)>("cuLinkComplete");
  auto destroy = lib.symbol<int (*)(State)>("cuLinkDestroy");
  if (!create || !add || !complete || !destroy) return unavailable("no cuLink* in libcuda");
  constexpr int kOptimizationLevel = 7, kInputPtx = 1;
  int opt = kOptimizationLevel;
  void* value = reinterpret_cast<void*>(static_cast<uintptr_t>(level));
  State st = nullptr;
  if (create(1, &opt, &value, &st) != 0) return internal_error("cuLinkCreate failed");
  std::string text = ptx;
  int r = add(st, kInputPtx, text.data(), text.size() + 1, "kernel.ptx", 0, nullptr, nullptr);
  void* cubin = nullptr;
  size_t size = 0;
  if (r == 0) r = complete(st, &cubin, &size);
  std::string out = r == 0 ? std::string(static_cast<const char*>(cubin), size) : std::string();
  destroy(st);
  if (out.empty()) return internal_error("the driver's JIT failed (" + std::to_string(r) + ")");
  return out;
}

// Random rows for a program without a generator (logreg: x and y).
PartitionData random_rows(const Manifest& m, int64_t rows, int dims) {
  PartitionData data;
  data.rows = rows;
  data.fields.resize(m.dataset.size());
  std::vector<uint8_t>& x = data.fields[0];
  std::vector<uint8_t>& y = data.fields[1];
  x.resize(size_t(rows) * dims * 4);
  y.resize(size_t(rows) * 4);
  float* xf = reinterpret_cast<float*>(x.data());
  float* yf = reinterpret_cast<float*>(y.data());
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([=] {
      std::mt19937 rng(t + 1);
      std::uniform_real_distribution<float> u(-1.f, 1.f);
      for (int64_t r = t; r < rows; r += threads) {
        for (int j = 0; j < dims; ++j) xf[r * dims + j] = u(rng);
        yf[r] = xf[r * dims] + xf[r * dims + 1] > 0 ? 1.f : 0.f;
      }
    });
  for (auto& th : pool) th.join();
  return data;
}

json fail(const Status& st) {
  return json{{"error", st.message()}};
}

// GPU 0's primary context, current on this thread (for the driver's JIT).
Status make_context_current() {
  LIZARD_ASSIGN_OR_RETURN(auto cu, cuda::CudaDriver::load());
  cuda::CUdevice dev = 0;
  cuda::CUcontext ctx = nullptr;
  LIZARD_RETURN_IF_ERROR(cu->check(cu->cuDeviceGet(&dev, 0), "cuDeviceGet"));
  LIZARD_RETURN_IF_ERROR(cu->check(cu->cuDevicePrimaryCtxRetain(&ctx, dev), "retain"));
  return cu->check(cu->cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
}

// Builds the candidate into the cache at `dir`: its compile's milliseconds.
Result<json> build(const cuda::NvrtcCompiler& cc, const ProgramVariant& v,
                   const std::string& candidate, const std::string& arch, const std::string& dir) {
  json out;
  if (candidate.rfind("jit", 0) != 0) {
    auto t0 = Clock::now();
    LIZARD_RETURN_IF_ERROR(cc.compile(v.image, arch).status());
    out["compile_ms"] = ms_since(t0);
    return out;
  }
  const int level = std::stoi(candidate.substr(3));
  LIZARD_RETURN_IF_ERROR(make_context_current());
  auto t0 = Clock::now();
  LIZARD_ASSIGN_OR_RETURN(std::string ptx,
                          compile_ptx(cc.library(), v.image, cc.options(arch), arch));
  const double nvrtc_ms = ms_since(t0);
  auto t1 = Clock::now();
  LIZARD_ASSIGN_OR_RETURN(std::string cubin, jit_link(ptx, level));
  out["jit_ms"] = ms_since(t1);
  out["nvrtc_ms"] = nvrtc_ms;
  out["compile_ms"] = nvrtc_ms + out["jit_ms"].get<double>();
  // Where the executor looks for the optimised build of these kernels.
  CompileCache cache(dir, uint64_t{1} << 32);
  LIZARD_RETURN_IF_ERROR(cache
                             .get_or_compile(cc.cache_key(v.image, arch, BuildTier::kOptimised),
                                             ".cubin",
                                             [&]() -> Result<std::string> { return cubin; })
                             .status());
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

json measure_in_this_process(const std::string& case_name, const std::string& candidate,
                             int64_t rows, int iters) {
  auto c = case_of(case_name);
  if (!c.ok()) return fail(c.status());
  if (const std::string extra = extra_options(candidate); !extra.empty())
    setenv("LIZARD_NVRTC_OPTIONS", extra.c_str(), 1);
  const fs::path dir = fs::temp_directory_path() /
                       ("lizard-first-tier-" + std::to_string(getpid()) + "-" + candidate);
  fs::remove_all(dir);
  CudaOptions o;
  o.gpus = GpuSelection::of({0});
  o.cache_dir = dir.string();
  o.quick_builds = false;
  auto gpus = make_cuda_executors(o);
  if (!gpus.ok()) return fail(gpus.status());
  Executor& gpu = *gpus->front();
  const std::string arch = gpu.info().arch;
  auto bundle = read_program_dir(c->dir);
  if (!bundle.ok()) return fail(bundle.status());
  auto image = make_program_image(*bundle);
  if (!image.ok()) return fail(image.status());
  // A kernel of this process's own, so that no compiler cache of the host
  // has seen the unit before, as for a value no run has used.
  image->sources[image->manifest.cuda_source] +=
      "\nextern \"C\" __global__ void lizard_first_tier_" + std::to_string(getpid()) + "() {}\n";
  auto params = bind_params(image->manifest, c->params);
  if (!params.ok()) return fail(params.status());
  auto cc = cuda::NvrtcCompiler::open(o.cuda_path, dir.string());
  if (!cc.ok()) return fail(cc.status());
  (*cc)->warm_up(arch);  // NVRTC's first call of a process: a worker has paid it at start
  const ProgramVariant all = variant_for_run(*image, *params);
  const bool whole = candidate.rfind("whole_", 0) == 0;
  const ProgramVariant v = whole ? all : kernel_set(all, KernelSet::kIterate);
  auto built = build(**cc, v, candidate, arch, dir.string());
  if (!built.ok()) return fail(built.status());
  json r = *built;
  // The generators (kmeans' blobs fill its rows), untimed, after the timed
  // compile: the run then finds both of its builds in the cache.
  if (!image->manifest.generate.empty() && !whole) {
    Status gen = (*cc)->compile(kernel_set(all, KernelSet::kGenerate).image, arch).status();
    if (!gen.ok()) return fail(gen);
  }
  r["case"] = case_name;
  r["candidate"] = candidate;
  r["options"] = extra_options(candidate);
  r["rows"] = rows;
  if (whole) {  // compile time only: the kernels are those of the same options
    fs::remove_all(dir);
    return r;
  }
  const bool kmeans = c->params.contains("k");
  PartitionData data;
  if (kmeans) {
    data.rows = rows;
    data.fields.resize(image->manifest.dataset.size());
    data.generators = {"blobs"};
    data.generate_seed = 7;
  } else {
    data = random_rows(image->manifest, rows, c->params["dims"].get<int>());
  }
  Status st = gpu.begin_run(*image, *params, std::move(data));
  if (!st.ok()) return fail(st);
  if (!gpu.run_compile_stats().cache_hit)
    return fail(internal_error("the run did not find the candidate's build in the cache"));
  auto state = make_section(image->manifest.state, image->manifest, *params);
  auto agg = make_section(image->manifest.aggregate, image->manifest, *params);
  if (!state.ok() || !agg.ok()) return fail(state.ok() ? agg.status() : state.status());
  if (kmeans) {  // centroids spread over the blobs' range
    const FieldSlot* slot = state->find("centroids");
    float* cent = reinterpret_cast<float*>(state->data(*slot));
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(0.f, 10.f);
    for (size_t i = 0; i < slot->bytes / 4; ++i) cent[i] = u(rng);
  }
  std::vector<double> kernel_ms;
  for (int it = 0; it <= iters && st.ok(); ++it) {
    IterationStats stats;
    st = gpu.iterate(*state, it, &*agg, &stats);
    if (it > 0) kernel_ms.push_back(stats.kernel_ms);
  }
  if (!st.ok()) return fail(st);
  const FieldSlot* counts = agg->find(kmeans ? "counts" : "count");
  int64_t total = 0;
  const int64_t* cs = reinterpret_cast<const int64_t*>(agg->data(*counts));
  for (size_t i = 0; i < counts->bytes / 8; ++i) total += cs[i];
  r["kernel_ms"] = median(kernel_ms);
  r["check"] = total == rows ? "counts sum to rows" : "COUNTS WRONG";
  (void)gpu.end_run(false);
  fs::remove_all(dir);
  return r;
}

}  // namespace lizard::first_tier
