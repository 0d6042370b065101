// make_executors: picks a worker's backend and creates its executors: one per
// selected GPU with the CUDA backend, or `cpu_executors` CPU executors (one by default).
//
//   BackendOptions o; o.backend = "auto";
//   std::string note;
//   auto ex = make_executors(o, &note);   // note: why the CPU backend was chosen
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "exec/executor.h"

namespace lizard {

struct BackendOptions {
  std::string backend = "auto";  // auto | cuda | cpu
  std::string gpus = "all";      // see exec/gpu_selection.h: all | none | 0,2 | count=N | auto:N
  std::string cuda_path = "/usr/local/cuda";
  int cpu_threads = 0;  // 0: all cores; with several CPU executors, each one's threads
  // The CPU backend as this many executors, each with its own threads, as if
  // the node had that many devices (a node's sockets; tests of several executors).
  int cpu_executors = 1;
  int cpu_first_ordinal = 0;         // the first CPU executor's ordinal (an executor process's one)
  std::string cache_dir;             // the host's caches: compiled kernels in its kernels/
  uint64_t compile_cache_mb = 2048;  // the bound of kernels/ (exec/compile_cache.h)
  // The longest one run of the host compiler (a CPU build, a host.cpp) may
  // take, and loading a built kernel library in an executor process.
  int compile_timeout_s = 120;
  // Input rows each executor keeps for later runs over them (on its GPU, or
  // in the CPU executor's memory; exec/kept_rows.h), in MiB; 0: none;
  // kKeptRowsAuto: a share of its memory (exec/kept_rows_budget.h).
  int64_t kept_rows_mb = 0;
  // The heap and private mappings (RLIMIT_DATA) of each CPU executor
  // process, in MiB; 0: the machine's memory.  A kernel that allocates past
  // it gets no memory (its run fails), not the machine's.
  int64_t cpu_memory_mb = 0;
  // A GPU run whose optimised build is not ready begins on a quick build
  // and switches between iterations (exec/cuda/nvrtc_compiler.h, BuildTier).
  bool quick_builds = true;
  // GPU executors warm NVRTC up in the background as they open, so that a
  // first build does not pay NVRTC's first call (exec/cuda/cuda_executor.h).
  bool warm_up_compiler = false;
};

Result<std::vector<std::unique_ptr<Executor>>> make_executors(const BackendOptions& o,
                                                              std::string* note);

}  // namespace lizard
