// The CUDA backend: one Executor per GPU, each with its own primary context,
// stream and device buffers, running a program's kernels compiled by NVRTC
// for that GPU's architecture.  libcuda and libnvrtc are loaded at run time,
// so this builds and links on nodes without CUDA.
//
//   CudaOptions o;  o.cache_dir = default_cache_root() + "/kernels";
//   auto gpus = make_cuda_executors(o);
//   if (!gpus.ok()) { log("CPU backend: " + gpus.status().message()); use_cpu(); }
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "exec/executor.h"
#include "exec/gpu_selection.h"

namespace lizard {

struct CudaOptions {
  std::string cuda_path = "/usr/local/cuda";     // toolkit directory, searched for libnvrtc
  GpuSelection gpus;                             // which devices (all by default)
  std::string cache_dir;                         // compiled cubins; empty = no disk cache
  uint64_t compile_cache_bytes = 2048ull << 20;  // the bound of cache_dir (exec/compile_cache.h)
  // Input rows each GPU keeps in its memory for later runs over them (see
  // exec/kept_rows.h); 0: none.  Evicted whenever a run needs the memory.
  uint64_t kept_rows_bytes = 0;
  bool kept_rows_auto = false;  // instead: half of each GPU's free memory when opened
  // A run whose optimised build is not ready begins on a quick one (BuildTier).
  bool quick_builds = true;
  // Warm NVRTC up in the background as the executors open (workers; not
  // tools that only probe the devices).
  bool warm_up_compiler = false;
};

// One executor per selected GPU.  kUnavailable, with the reason ("libcuda.so.1
// not found ...", "no CUDA devices", "CUDA driver too old ...", "libnvrtc not
// found ..."), when this node cannot run CUDA programs; kInvalidArgument when
// `gpus` names a device that does not exist or selects none.  auto:N opens
// every device to read its free memory and keeps the N with the most.
Result<std::vector<std::unique_ptr<Executor>>> make_cuda_executors(const CudaOptions& options);

}  // namespace lizard
