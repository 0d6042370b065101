#include "exec/cuda/nvrtc_compiler.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "program/device_library.h"

namespace fs = std::filesystem;

namespace lizard::cuda {
namespace {

constexpr const char* kHeaderName = "lizard_program.h";

bool valid_arch(const std::string& arch) {
  if (arch.size() < 5 || arch.compare(0, 3, "sm_") != 0) return false;
  return std::all_of(arch.begin() + 3, arch.end(),
                     [](char c) { return (c >= '0' && c <= '9') || c == 'a' || c == 'f'; });
}

// The program's own headers (every source but the CUDA one) and the generated header.
void collect_headers(const ProgramImage& p, std::vector<std::string>* names,
                     std::vector<std::string>* texts) {
  names->push_back(kHeaderName);
  texts->push_back(p.header);
  for (const auto& [name, text] : device_library_files()) {
    if (p.sources.count(name)) continue;  // the program's own file of that name wins
    names->push_back(name);
    texts->push_back(std::string(text));
  }
  for (const auto& [name, text] : p.sources) {
    if (name == p.manifest.cuda_source || name == p.manifest.host_source || name == kHeaderName)
      continue;
    names->push_back(name);
    texts->push_back(text);
  }
}

}  // namespace

NvrtcCompiler::NvrtcCompiler(std::shared_ptr<const NvrtcLibrary> nvrtc, std::string cuda_path,
                             std::string cache_dir, uint64_t max_cache_bytes)
    : nvrtc_(std::move(nvrtc)),
      cuda_path_(std::move(cuda_path)),
      cache_(std::move(cache_dir), max_cache_bytes) {}

Result<std::shared_ptr<const NvrtcCompiler>> NvrtcCompiler::open(const std::string& cuda_path,
                                                                 const std::string& cache_dir,
                                                                 uint64_t max_cache_bytes) {
  LIZARD_ASSIGN_OR_RETURN(auto nv, NvrtcLibrary::load(cuda_path));
  return std::shared_ptr<const NvrtcCompiler>(
      std::make_shared<NvrtcCompiler>(std::move(nv), cuda_path, cache_dir, max_cache_bytes));
}

std::vector<std::string> NvrtcCompiler::options(const std::string& arch, BuildTier tier) const {
  // Not -Xptxas=--split-compile: in NVRTC 13.0 it crashes the compiling
  // process now and then (a segfault in 2 of 8 runs of a unit test).
  std::vector<std::string> o{"-arch=" + arch, "-std=c++17", "-default-device"};
  // The first tiers (BuildTier): kQuick keeps NVVM's full optimisation and
  // runs ptxas at -O1; kFast adds NVRTC's fast-compile level, whose NVVM
  // leaves per-thread arrays in local memory.
  if (tier == BuildTier::kFast) o.push_back("-Ofc=mid");
  if (tier != BuildTier::kOptimised) o.push_back("-Xptxas=-O1");
  std::error_code ec;
  if (!cuda_path_.empty() && fs::is_directory(cuda_path_ + "/include", ec))
    o.push_back("--include-path=" + cuda_path_ + "/include");
  // Extra options from the environment (say -lineinfo for a profiler), in
  // the cache key like every other option.
  if (const char* extra = std::getenv("LIZARD_NVRTC_OPTIONS")) {
    std::istringstream words(extra);
    for (std::string w; words >> w;) o.push_back(w);
  }
  return o;
}

std::string NvrtcCompiler::cache_key(const ProgramImage& p, const std::string& arch,
                                     BuildTier tier) const {
  CompileKey key;
  key.add("format", "lizard-nvrtc-3").add("nvrtc", std::to_string(nvrtc_->version()));
  key.add("arch", arch);
  for (const auto& o : options(arch, tier)) key.add("option", o);
  for (const auto& [name, text] : device_library_files())
    key.add("library", name).add("text", text);
  key.add("program", p.hash).add("unit", p.manifest.cuda_source).add("header", p.header);
  for (const auto& [name, text] : p.sources) key.add("source", name).add("text", text);
  return key.digest();
}

bool NvrtcCompiler::cached(const ProgramImage& program, const std::string& arch,
                           BuildTier tier) const {
  return contains(program.hash, cache_key(program, arch, tier));
}

bool NvrtcCompiler::contains(const std::string& owner, const std::string& key) const {
  return cache_.owned_by(owner).contains(key, ".cubin");
}

Result<CompiledProgram> NvrtcCompiler::compile(const ProgramImage& program, const std::string& arch,
                                               BuildTier tier) const {
  if (!valid_arch(arch))
    return invalid_argument("'" + arch + "' is not a GPU architecture (expected sm_XY)");
  if (program.sources.find(program.manifest.cuda_source) == program.sources.end())
    return invalid_argument("program has no CUDA source '" + program.manifest.cuda_source + "'");
  std::string log;
  LIZARD_ASSIGN_OR_RETURN(
      CacheEntry entry,
      cache_.owned_by(program.hash)
          .get_or_compile(cache_key(program, arch, tier), ".cubin", [&]() -> Result<std::string> {
            LIZARD_ASSIGN_OR_RETURN(CompiledProgram out, run_nvrtc(program, arch, tier));
            log = std::move(out.log);
            return std::move(out.cubin);
          }));
  return CompiledProgram{arch, std::move(entry.payload), std::move(log), entry.hit};
}

void NvrtcCompiler::warm_up(const std::string& arch) const {
  const NvrtcLibrary& nv = *nvrtc_;
  nvrtcProgram prog = nullptr;
  if (nv.nvrtcCreateProgram(&prog, "extern \"C\" __global__ void warm_up(float* x) { *x = 1; }\n",
                            "warm_up.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS)
    return;
  const std::string arch_option = "-arch=" + arch;
  const char* opts[] = {arch_option.c_str()};
  nv.nvrtcCompileProgram(prog, 1, opts);
  nv.nvrtcDestroyProgram(&prog);
}

Result<CompiledProgram> NvrtcCompiler::run_nvrtc(const ProgramImage& program,
                                                 const std::string& arch, BuildTier tier) const {
  const NvrtcLibrary& nv = *nvrtc_;
  const std::string& unit = program.manifest.cuda_source;
  std::vector<std::string> names, texts;
  collect_headers(program, &names, &texts);
  std::vector<const char*> name_ptrs, text_ptrs;
  for (size_t k = 0; k < names.size(); ++k) {
    name_ptrs.push_back(names[k].c_str());
    text_ptrs.push_back(texts[k].c_str());
  }
  nvrtcProgram prog = nullptr;
  nvrtcResult r =
      nv.nvrtcCreateProgram(&prog, program.sources.at(unit).c_str(), unit.c_str(),
                            static_cast<int>(names.size()), text_ptrs.data(), name_ptrs.data());
  if (r != NVRTC_SUCCESS)
    return internal_error(unit + ": nvrtcCreateProgram failed: " + nv.nvrtcGetErrorString(r));
  struct Destroy {  // releases the program on every path below
    const NvrtcLibrary& nv;
    nvrtcProgram* p;
    ~Destroy() { nv.nvrtcDestroyProgram(p); }
  } destroy{nv, &prog};

  const std::vector<std::string> opts = options(arch, tier);
  std::vector<const char*> opt_ptrs;
  for (const auto& o : opts) opt_ptrs.push_back(o.c_str());
  r = nv.nvrtcCompileProgram(prog, static_cast<int>(opt_ptrs.size()), opt_ptrs.data());

  std::string log;
  size_t log_size = 0;
  if (nv.nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    log.resize(log_size);
    if (nv.nvrtcGetProgramLog(prog, log.data()) != NVRTC_SUCCESS) log.clear();
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  }
  if (r != NVRTC_SUCCESS) {
    return compile_error(unit + ": NVRTC (" + arch + ") failed:\n" +
                         (log.empty() ? std::string(nv.nvrtcGetErrorString(r)) : log));
  }
  size_t size = 0;
  if (nv.nvrtcGetCUBINSize(prog, &size) != NVRTC_SUCCESS || size == 0)
    return internal_error(unit + ": NVRTC produced no cubin for " + arch);
  std::string cubin(size, '\0');
  if (nv.nvrtcGetCUBIN(prog, cubin.data()) != NVRTC_SUCCESS)
    return internal_error(unit + ": nvrtcGetCUBIN failed for " + arch);
  return CompiledProgram{arch, std::move(cubin), std::move(log), false};
}

Result<CompiledProgram> compile_for_arch(const ProgramImage& program, const std::string& arch,
                                         const std::string& cuda_path,
                                         const std::string& cache_dir) {
  LIZARD_ASSIGN_OR_RETURN(auto cc, NvrtcCompiler::open(cuda_path, cache_dir));
  return cc->compile(program, arch);
}

}  // namespace lizard::cuda
