// compile_cost: where the time of a kernel build goes.  Compiles, with NVRTC
// for one architecture (no GPU needed), in one process and in this order:
//   1. a bare kernel (the first NVRTC call of the process),
//   2. the same bare kernel again,
//   3. a kernel that includes only lizard_program.h and the device library,
//   4. examples/kmeans specialised to (k, dims) = (16, 32),
//   5. examples/kmeans specialised to a new k (what a new param value costs),
//      and as the quick build a run begins on (BuildTier::kQuick),
//   6. examples/kmeans (16, 32) with other NVRTC options: PTX only (the
//      front end and NVVM without ptxas), ptxas at -O1 and -O0, and split
//      compilation in NVVM and in ptxas,
//   7. NVRTC's own account (its --time option) of where a new k's optimised
//      and quick builds spend their time: the C++ front end, NVVM, and the
//      PTX translation (ptxas),
//   8. step 4 again through NvrtcCompiler with a disk cache (a hit).
// and prints each time in ms.  With --cache DIR it instead builds
// examples/kmeans (16, 32) once with NVRTC and once for the CPU backend
// through the host's compile cache in DIR and prints each time and whether it
// was a hit: run it twice for a cold compile, then a hit in a new process.
//
//   build/bench/compile_cost [--arch sm_90] [--cuda /usr/local/cuda] [--repeat 3]
//   build/bench/compile_cost --cache /tmp/kernels      # cold, then again: from disk
//   build/bench/compile_cost --cache /tmp/kernels --json F   # and the times as JSON in F
//   build/bench/compile_cost --dump /tmp/kmeans-src    # the sources NVRTC sees (and in cpu/
//                                                      # the CPU backend's unit and flags)
//   build/bench/compile_cost --shape 256x64            # kmeans at (k, dims) = (256, 64)
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "exec/cpu/kernel_source.h"
#include "exec/cuda/nvrtc_compiler.h"
#include "exec/host_compiler.h"
#include "exec/program_variant.h"
#include "program/bundle.h"
#include "program/device_library.h"
#include "program/layout.h"

namespace fs = std::filesystem;
using namespace lizard;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// A program image whose kernel.cu is `kernel`, with kmeans' manifest.
ProgramImage with_kernel(ProgramImage base, const std::string& kernel) {
  base.sources[base.manifest.cuda_source] = kernel;
  base.hash += "-" + std::to_string(std::hash<std::string>()(kernel));
  return base;
}

double timed_compile(const cuda::NvrtcCompiler& cc, const ProgramImage& p, const std::string& arch,
                     bool* hit = nullptr, BuildTier tier = BuildTier::kOptimised) {
  auto t0 = Clock::now();
  auto r = cc.compile(p, arch, tier);
  double ms = ms_since(t0);
  if (!r.ok()) {
    std::fprintf(stderr, "compile failed: %s\n", r.status().message().c_str());
    std::exit(1);
  }
  if (hit) *hit = r->from_cache;
  return ms;
}

// Compiles `p` with NVRTC directly with `opts` (no cache), for comparing options.
double raw_compile(const cuda::NvrtcLibrary& nv, const ProgramImage& p,
                   const std::vector<std::string>& opts) {
  std::vector<std::string> names{"lizard_program.h"}, texts{p.header};
  for (const auto& [name, text] : p.sources)
    if (name != p.manifest.cuda_source && name != p.manifest.host_source) {
      names.push_back(name);
      texts.push_back(text);
    }
  for (const auto& [name, text] : device_library_files()) {
    names.push_back(name);
    texts.push_back(std::string(text));
  }
  std::vector<const char*> np, tp, op;
  for (size_t i = 0; i < names.size(); ++i)
    np.push_back(names[i].c_str()), tp.push_back(texts[i].c_str());
  for (const auto& o : opts) op.push_back(o.c_str());
  auto t0 = Clock::now();
  cuda::nvrtcProgram prog = nullptr;
  nv.nvrtcCreateProgram(&prog, p.sources.at(p.manifest.cuda_source).c_str(), "kernel.cu",
                        (int)np.size(), tp.data(), np.data());
  int r = nv.nvrtcCompileProgram(prog, (int)op.size(), op.data());
  double ms = ms_since(t0);
  if (r != 0) {
    size_t n = 0;
    nv.nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, 0);
    nv.nvrtcGetProgramLog(prog, log.data());
    std::fprintf(stderr, "raw compile failed: %s\n", log.c_str());
  }
  nv.nvrtcDestroyProgram(&prog);
  return ms;
}

// NVRTC's phases of a compile of `p` with `opts`, from the CSV its --time
// option writes ("file, phase, ms, unit" rows), as "phase X ms" pairs.
std::string nvrtc_phases(const cuda::NvrtcLibrary& nv, const ProgramImage& p,
                         std::vector<std::string> opts) {
  const fs::path csv =
      fs::temp_directory_path() / ("lizard-compile-phases-" + std::to_string(getpid()) + ".csv");
  opts.push_back("--time=" + csv.string());
  raw_compile(nv, p, opts);
  std::ifstream in(csv);
  std::string line, out;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    const size_t a = line.find(", "), b = line.find(", ", a + 2), c = line.find(", ", b + 2);
    if (c == std::string::npos) continue;
    out += (out.empty() ? "" : ", ") + line.substr(a + 2, b - a - 2) + " " +
           line.substr(b + 2, c - b - 2) + " ms";
  }
  fs::remove(csv);
  return out.empty() ? "(NVRTC wrote no timings)" : out;
}

// One kmeans build per backend through the compile cache in `dir`.
int cache_mode(const std::string& cuda_path, const ProgramImage& kmeans,
               const ProgramImage& kmeans_other, const std::string& arch, const std::string& dir,
               const std::string& json) {
  auto cc = cuda::NvrtcCompiler::open(cuda_path, dir);
  if (!cc.ok()) return std::fprintf(stderr, "%s\n", cc.status().message().c_str()), 1;
  bool hit = false;
  double ms = timed_compile(**cc, kmeans, arch, &hit);
  const double nvrtc_ms = ms;
  const bool nvrtc_hit = hit;
  std::printf("%-44s %10.1f %s\n", "kmeans (16, 32), NVRTC", ms, hit ? "hit" : "miss");
  auto plan = plan_cpu_build(kmeans);
  if (!plan.ok()) return std::fprintf(stderr, "%s\n", plan.status().message().c_str()), 1;
  HostCompiler host(dir);
  auto t0 = Clock::now();
  auto lib = host.build_shared(plan->files, plan->units, plan->flags, &hit, &plan->pch);
  ms = ms_since(t0);
  if (!lib.ok()) return std::fprintf(stderr, "%s\n", lib.status().message().c_str()), 1;
  std::printf("%-44s %10.1f %s\n", "kmeans (16, 32), CPU backend", ms, hit ? "hit" : "miss");
  // The CPU runtime precompiled, as a worker has it made after its second
  // build, then a build of other values that reads it.
  t0 = Clock::now();
  const bool made = host.make_precompiled(plan->files, plan->flags, plan->pch);
  std::printf("%-44s %10.1f %s\n", "CPU runtime precompiled", ms_since(t0),
              made ? "made or found" : "failed");
  auto other = plan_cpu_build(kmeans_other);
  if (!other.ok()) return std::fprintf(stderr, "%s\n", other.status().message().c_str()), 1;
  t0 = Clock::now();
  bool other_hit = false;
  lib = host.build_shared(other->files, other->units, other->flags, &other_hit, &other->pch);
  std::printf("%-44s %10.1f %s\n", "kmeans, k + 1, CPU backend with it", ms_since(t0),
              other_hit ? "hit" : "miss");
  if (!json.empty()) {  // for bench/save-result
    std::FILE* f = std::fopen(json.c_str(), "w");
    if (!f) return std::fprintf(stderr, "cannot write %s\n", json.c_str()), 1;
    std::fprintf(f,
                 "{\"arch\": \"%s\", \"nvrtc\": {\"ms\": %.3f, \"hit\": %s}, "
                 "\"cpu\": {\"ms\": %.3f, \"hit\": %s}}\n",
                 arch.c_str(), nvrtc_ms, nvrtc_hit ? "true" : "false", ms, hit ? "true" : "false");
    std::fclose(f);
  }
  return 0;
}

// Writes the files NVRTC compiles for `p` into `dir`, for nvcc or ptxas by hand.
int dump_sources(const ProgramImage& p, const std::string& dir) {
  auto write = [&](const std::string& name, const std::string& text) {
    const fs::path path = fs::path(dir) / name;
    fs::create_directories(path.parent_path());
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return false;
    std::fwrite(text.data(), 1, text.size(), f);
    return std::fclose(f) == 0;
  };
  bool ok = write("lizard_program.h", p.header);
  for (const auto& [name, text] : p.sources)
    if (name != p.manifest.host_source) ok = write(name, text) && ok;
  for (const auto& [name, text] : device_library_files()) ok = write(name, std::string(text)) && ok;
  // The CPU backend's translation unit and its flags, in cpu/.
  auto cpu = plan_cpu_build(p);
  if (!cpu.ok()) return std::fprintf(stderr, "%s\n", cpu.status().message().c_str()), 1;
  for (const auto& [name, text] : cpu->files) ok = write("cpu/" + name, text) && ok;
  std::string flags;
  for (const auto& f : cpu->flags) flags += f + " ";
  ok = write("cpu/flags", flags + "\n") && ok;
  std::printf("%s: %s\n", dir.c_str(), ok ? "written" : "could not write");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string arch = "sm_90", cuda_path = "/usr/local/cuda";
  int repeat = 3;
  std::string cache_dir, dump_dir, json_path;
  int shape_k = 16, shape_dims = 32;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--arch")) arch = argv[i + 1];
    if (!std::strcmp(argv[i], "--cuda")) cuda_path = argv[i + 1];
    if (!std::strcmp(argv[i], "--repeat")) repeat = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--cache")) cache_dir = argv[i + 1];
    if (!std::strcmp(argv[i], "--dump")) dump_dir = argv[i + 1];
    if (!std::strcmp(argv[i], "--json")) json_path = argv[i + 1];
    if (!std::strcmp(argv[i], "--shape")) std::sscanf(argv[i + 1], "%dx%d", &shape_k, &shape_dims);
  }
  auto bundle = read_program_dir(LIZARD_KMEANS_EXAMPLE_DIR);
  if (!bundle.ok()) return std::fprintf(stderr, "%s\n", bundle.status().message().c_str()), 1;
  auto image = make_program_image(*bundle);
  if (!image.ok()) return std::fprintf(stderr, "%s\n", image.status().message().c_str()), 1;

  auto t_open = Clock::now();
  auto cc = cuda::NvrtcCompiler::open(cuda_path, "");
  if (!cc.ok()) return std::fprintf(stderr, "%s\n", cc.status().message().c_str()), 1;
  std::printf("NVRTC %s, %s: dlopen %.1f ms\n", (*cc)->library().version_string().c_str(),
              arch.c_str(), ms_since(t_open));

  auto variant = [&](int k, int dims) {
    auto params = bind_params(image->manifest, {{"k", k}, {"dims", dims}});
    if (!params.ok()) std::exit(1);
    return variant_for_run(*image, *params).image;
  };
  const ProgramImage kmeans = variant(shape_k, shape_dims);
  if (!cache_dir.empty())
    return cache_mode(cuda_path, kmeans, variant(shape_k + 1, shape_dims), arch, cache_dir,
                      json_path);
  if (!dump_dir.empty()) return dump_sources(kmeans, dump_dir);
  const ProgramImage bare =
      with_kernel(kmeans, "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n");
  const ProgramImage headers = with_kernel(
      kmeans,
      "#include \"lizard_program.h\"\nextern \"C\" __global__ void k(float* x) { x[0] = 1; }\n");

  std::printf("%-44s %10s\n", "build", "ms");
  std::printf("%-44s %10.1f\n", "bare kernel, first NVRTC call", timed_compile(**cc, bare, arch));
  for (int r = 0; r < repeat; ++r)
    std::printf("%-44s %10.1f\n", "bare kernel again", timed_compile(**cc, bare, arch));
  for (int r = 0; r < repeat; ++r)
    std::printf("%-44s %10.1f\n", "lizard_program.h + device library only",
                timed_compile(**cc, headers, arch));
  for (int r = 0; r < repeat; ++r)
    std::printf("%-44s %10.1f\n", "examples/kmeans (16, 32)", timed_compile(**cc, kmeans, arch));
  for (int r = 0; r < repeat; ++r)
    std::printf("%-44s %10.1f\n", "examples/kmeans, new k",
                timed_compile(**cc, variant(17 + r, 32), arch));
  for (int r = 0; r < repeat; ++r)
    std::printf("%-44s %10.1f\n", "examples/kmeans, new k, quick build",
                timed_compile(**cc, variant(40 + r, 32), arch, nullptr, BuildTier::kQuick));

  // Each of kmeans' two kernels alone: which one the time goes to.
  const std::string& src = kmeans.sources.at(kmeans.manifest.cuda_source);
  const size_t assign_at = src.find("extern \"C\" __global__ void assign");
  const size_t blobs_at = src.find("extern \"C\" __global__ void blobs");
  if (assign_at != std::string::npos && blobs_at != std::string::npos && blobs_at < assign_at) {
    const std::string assign_only = src.substr(0, blobs_at) + src.substr(assign_at);
    const std::string blobs_only = src.substr(0, assign_at);
    for (int r = 0; r < repeat; ++r) {
      std::printf("%-44s %10.1f\n", "kmeans, assign kernel only",
                  timed_compile(**cc, with_kernel(kmeans, assign_only), arch));
      std::printf("%-44s %10.1f\n", "kmeans, blobs kernel only",
                  timed_compile(**cc, with_kernel(kmeans, blobs_only), arch));
    }
  }

  const std::string inc = "--include-path=" + cuda_path + "/include";
  const std::vector<std::vector<std::string>> option_sets{
      {"-arch=" + arch, "-std=c++17", "-default-device", inc},
      {"-arch=compute_" + arch.substr(3), "-std=c++17", "-default-device", inc},
      {"-arch=" + arch, "-std=c++17", "-default-device", inc, "-Xptxas=-O1"},
      {"-arch=" + arch, "-std=c++17", "-default-device", inc, "-Xptxas=-O0"},
      {"-arch=" + arch, "-std=c++17", "-default-device", inc, "-split-compile=0"},
      {"-arch=" + arch, "-std=c++17", "-default-device", inc, "-Xptxas=--split-compile=0"},
      {"-arch=" + arch, "-std=c++17", "-default-device", inc, "-split-compile=0",
       "-Xptxas=--split-compile=0"},
      {"-arch=" + arch, "-std=c++17", "-default-device", inc, "-Xptxas=-O1",
       "-Xptxas=--split-compile=0"},
      {"-arch=" + arch, "-std=c++17", "-default-device", inc, "-minimal"},
      {"-arch=" + arch, "-std=c++17", "-default-device", inc, "-Ofc=min"},
      {"-arch=" + arch, "-std=c++17", "-default-device", inc, "-Ofc=mid"},
      {"-arch=" + arch, "-std=c++17", "-default-device", inc, "-Ofc=max"},
      {"-arch=" + arch, "-std=c++17", "-default-device", inc, "-Ofc=mid", "-split-compile=0"},
      {"-arch=compute_" + arch.substr(3), "-std=c++17", "-default-device", inc, "-Ofc=mid"},
  };
  // Each option set on a k of its own: NVRTC keeps results in the process,
  // so the same source twice would time its cache.
  int fresh_k = 40;
  for (auto opts : option_sets) {
    const ProgramImage fresh = variant(fresh_k++, 32);
    std::string label;
    for (size_t i = 0; i < opts.size(); ++i)
      if (i != 1 && i != 2 && i != 3) label += opts[i] + " ";
    std::printf("%-44s %10.1f\n", ("kmeans raw " + label).c_str(),
                raw_compile((*cc)->library(), fresh, opts));
  }

  // With the options the worker's builds use at each tier.
  std::printf("kmeans, new k, NVRTC's phases: %s\n",
              nvrtc_phases((*cc)->library(), variant(fresh_k++, 32),
                           (*cc)->options(arch, BuildTier::kOptimised))
                  .c_str());
  std::printf("kmeans, new k, quick build, NVRTC's phases: %s\n",
              nvrtc_phases((*cc)->library(), variant(fresh_k++, 32),
                           (*cc)->options(arch, BuildTier::kQuick))
                  .c_str());

  const fs::path dir =
      fs::temp_directory_path() / ("lizard-compile-cost-" + std::to_string(getpid()));
  auto cached = cuda::NvrtcCompiler::open(cuda_path, dir.string());
  timed_compile(**cached, kmeans, arch);
  bool hit = false;
  double ms = timed_compile(**cached, kmeans, arch, &hit);
  std::printf("%-44s %10.1f%s\n", "examples/kmeans from the disk cache", ms, hit ? "" : " (miss!)");
  fs::remove_all(dir);
  return 0;
}
