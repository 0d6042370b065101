// NvrtcCompiler: compiles a program's kernel.cu with NVRTC into native code
// (a cubin) for one GPU architecture, kept in the host's CompileCache
// (exec/compile_cache.h) keyed by the NVRTC version, its options, the
// architecture and the sources (generated header with the specialised values,
// device library, kernel), so that no process of the host compiles it again,
// also after a restart.  Needs no GPU and no driver.  Builds come in two
// tiers (BuildTier, exec/program_variant.h): kOptimised at NVRTC's full
// optimisation, kQuick with ptxas at -O1 (NVVM still optimises fully, so
// kernels keep their registers), and kFast with NVRTC's fast-compile level
// as well.
//
//   Result<std::shared_ptr<const NvrtcCompiler>> cc = NvrtcCompiler::open("/usr/local/cuda", dir);
//   Result<CompiledProgram> out = (*cc)->compile(program, "sm_90");
//   if (!out.ok()) report(out.status().message());  // "kernel.cu: NVRTC (sm_90) failed:\n..."
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "exec/compile_cache.h"
#include "exec/cuda/nvrtc_library.h"
#include "exec/executor.h"
#include "exec/program_variant.h"

namespace lizard::cuda {

struct CompiledProgram {
  std::string arch;   // "sm_90"
  std::string cubin;  // the image for cuModuleLoadData
  std::string log;    // compiler warnings; empty when clean or from the cache
  bool from_cache = false;
};

class NvrtcCompiler {
 public:
  // `cache_dir` empty: no disk cache; else kept within `max_cache_bytes`.
  // `cuda_path` is the toolkit directory whose include/ is added to the
  // header search path when it exists.
  NvrtcCompiler(std::shared_ptr<const NvrtcLibrary> nvrtc, std::string cuda_path,
                std::string cache_dir, uint64_t max_cache_bytes = CompileCache::kDefaultMaxBytes);
  // Loads NVRTC from `cuda_path` (see NvrtcLibrary::load).
  static Result<std::shared_ptr<const NvrtcCompiler>> open(
      const std::string& cuda_path, const std::string& cache_dir,
      uint64_t max_cache_bytes = CompileCache::kDefaultMaxBytes);

  // Compiles `program` for `arch` ("sm_XY").  A kCompileError carries the
  // NVRTC log; kInvalidArgument when the program lacks its CUDA source.
  Result<CompiledProgram> compile(const ProgramImage& program, const std::string& arch,
                                  BuildTier tier = BuildTier::kOptimised) const;

  // Compiles a one-line kernel for `arch`, caching nothing, so that NVRTC's
  // first call in the process (loading its builtins, about 0.25 s on a
  // fresh GPU node) is paid before a user's build needs it.
  void warm_up(const std::string& arch) const;

  // Whether compile(program, arch, tier) would find the cubin in the cache.
  bool cached(const ProgramImage& program, const std::string& arch,
              BuildTier tier = BuildTier::kOptimised) const;
  // The cache entry's name for that build, and whether the cache holds that
  // entry among its program's (`owner`: the program's checksum; cached() is
  // the two together).  Each program's cubins lie among its own entries
  // (CompileCache::owned_by).
  std::string cache_key(const ProgramImage& program, const std::string& arch, BuildTier tier) const;
  bool contains(const std::string& owner, const std::string& key) const;

  const NvrtcLibrary& library() const { return *nvrtc_; }
  // The NVRTC options used for `arch` at `tier`.
  std::vector<std::string> options(const std::string& arch,
                                   BuildTier tier = BuildTier::kOptimised) const;

 private:
  Result<CompiledProgram> run_nvrtc(const ProgramImage& program, const std::string& arch,
                                    BuildTier tier) const;

  std::shared_ptr<const NvrtcLibrary> nvrtc_;
  std::string cuda_path_;
  CompileCache cache_;
};

// Compiles `program` for `arch` with the NVRTC found under `cuda_path`, with
// no GPU needed: for the server, tests and tools.
Result<CompiledProgram> compile_for_arch(const ProgramImage& program, const std::string& arch,
                                         const std::string& cuda_path = "/usr/local/cuda",
                                         const std::string& cache_dir = "");

}  // namespace lizard::cuda
