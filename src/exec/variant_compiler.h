// VariantCompiler: builds a program's variants (exec/program_variant.h) into
// the host's compile cache exactly as a worker's executors build them when a
// run begins, with no device and no executor involved: the host compiler for
// the CPU backend, NVRTC for each GPU architecture of the worker.  A worker
// builds the variants of queued runs with it ahead of their start; their
// executors then read the builds from the cache.  Thread-safe: the cache
// makes concurrent compiles of one variant single-flight.
//
//   auto vc = VariantCompiler::make(backend_options, executor_infos);
//   if (vc.ok() && !(*vc)->cached(variant)) (*vc)->compile(variant, &compiled);
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "exec/executor.h"
#include "exec/executor_factory.h"
#include "exec/host_compiler.h"
#include "exec/program_variant.h"

namespace lizard {

namespace cuda {
class NvrtcCompiler;
}

class VariantCompiler {
 public:
  // For executors of `executors`' kind ("cpu", or "cuda" with their
  // architectures), caching where `o` says the executors cache.
  // kUnavailable when they keep no cache, or NVRTC cannot be loaded.
  static Result<std::unique_ptr<VariantCompiler>> make(const BackendOptions& o,
                                                       const std::vector<ExecutorInfo>& executors);
  ~VariantCompiler();

  // Whether the executors begin runs on quick builds (GPUs with
  // BackendOptions::quick_builds): then a variant's quick build is worth
  // making ahead of its optimised one.
  bool tiered() const { return nvrtc_ && quick_builds_; }
  // Whether it builds for GPUs (NVRTC), rather than for the CPU backend.
  bool for_gpus() const { return nvrtc_ != nullptr; }
  // Whether every build of `variant` at `tier` the executors need is in the
  // cache.  The cache entries' names are worked out once per variant key
  // and tier (hashing the program with the device library takes about a
  // millisecond); the cache itself is looked at every time.
  bool cached(const ProgramVariant& variant, BuildTier tier = BuildTier::kOptimised) const;
  // Builds those of `variant` at `tier` that are not in the cache;
  // `compiled`: whether this call compiled any (rather than finding them, or
  // waiting for another process that compiled them).  A compile error
  // carries the log.  The CPU backend's builds have one tier.
  Status compile(const ProgramVariant& variant, bool* compiled,
                 BuildTier tier = BuildTier::kOptimised) const;

  // One cache entry of a variant's build: its name, and the architecture
  // it is for ("sm_90", or "cpu" for the CPU backend).
  struct Entry {
    std::string name, arch;
  };
  // The entries a build of `variant` at `tier` makes (empty when it cannot
  // be planned), so that they can be taken from or given to another host.
  std::vector<Entry> entries(const ProgramVariant& variant, BuildTier tier) const;
  // The payload of entry `name` of `owner` (a program's checksum;
  // CompileCache::owned_by), checked, or kNotFound.
  Result<std::string> read(const std::string& owner, const std::string& name) const;
  // Stores `payload` as entry `name` of `owner` unless it is there already.
  Status store(const std::string& owner, const std::string& name, const std::string& payload) const;
  // Makes the CPU backend's precompiled runtime headers (both kinds of
  // build, with fibers and without) unless the cache has them: in the
  // worker, since its executor processes, each confined to its program's
  // builds, read them but cannot write them.  Nothing for GPUs.
  void make_precompiled_headers() const;
  // What the builds are made with: a digest of the compiler, its version
  // and the machine (CPU backend), or of NVRTC's version, and lizard's.
  // Two hosts that name the same make the same build of a variant.
  std::string toolchain() const;

 private:
  VariantCompiler() = default;
  // The names of `variant`'s cache entries at `tier`: one per architecture,
  // or the CPU build's; none when it cannot be planned.  A variant's key
  // names its program's files and specialised values, and the rest of what
  // the names cover (the compilers, their options, the device library) is
  // fixed for the process.
  std::vector<std::string> entry_names(const ProgramVariant& variant, BuildTier tier) const;

  std::unique_ptr<HostCompiler> host_;                // the CPU backend
  std::shared_ptr<const cuda::NvrtcCompiler> nvrtc_;  // the CUDA backend
  std::vector<std::string> archs_;                    // with nvrtc_: each once
  std::unique_ptr<CompileCache> cache_;               // where both keep their entries
  std::string suffix_;                                // ".so" or ".cubin"
  bool quick_builds_ = false;
  mutable std::mutex names_mu_;
  // By variant key and tier; forgotten wholesale past kMaxNamed.
  mutable std::map<std::string, std::vector<std::string>> names_;  // GUARDED_BY(names_mu_)
};

}  // namespace lizard
