#include "exec/executor_factory.h"

#include <unistd.h>

#include <algorithm>

#include "exec/cpu/cpu_executor.h"
#include "exec/cuda/cuda_executor.h"
#include "exec/gpu_selection.h"
#include "exec/kept_rows_budget.h"

namespace lizard {

Result<std::vector<std::unique_ptr<Executor>>> make_executors(const BackendOptions& o,
                                                              std::string* note) {
  if (o.backend != "auto" && o.backend != "cuda" && o.backend != "cpu")
    return invalid_argument("--backend must be auto, cuda or cpu (got '" + o.backend + "')");
  std::vector<std::unique_ptr<Executor>> out;
  LIZARD_ASSIGN_OR_RETURN(GpuSelection selection, parse_gpu_selection(o.gpus));
  const bool no_gpu = selection.kind == GpuSelection::Kind::kNone;
  if (no_gpu && o.backend == "cuda")
    return invalid_argument("--gpus none leaves the CUDA backend no GPU; use --backend cpu");
  if (no_gpu && o.backend == "auto" && note) *note = "--gpus none: using the CPU backend";
  if (o.backend != "cpu" && !no_gpu) {
    CudaOptions c;
    c.cuda_path = o.cuda_path;
    c.cache_dir = o.cache_dir.empty() ? "" : o.cache_dir + "/kernels";
    c.compile_cache_bytes = o.compile_cache_mb << 20;
    c.gpus = selection;
    c.kept_rows_bytes = kept_rows_budget(std::max<int64_t>(0, o.kept_rows_mb), {});
    c.kept_rows_auto = o.kept_rows_mb < 0;
    c.quick_builds = o.quick_builds;
    c.warm_up_compiler = o.warm_up_compiler;
    auto gpus = make_cuda_executors(c);
    if (gpus.ok()) {
      out = std::move(gpus).value();
    } else if (o.backend == "cuda" || gpus.status().code() == Code::kInvalidArgument) {
      return gpus.status();
    } else if (note) {
      *note = "no usable GPU (" + gpus.status().message() + "); using the CPU backend";
    }
  }
  if (!out.empty()) return out;
  if (o.cpu_executors < 1) return invalid_argument("--cpu-executors must be at least 1");
  ExecutorInfo host;
  host.kind = "cpu";
  host.total_memory = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                      static_cast<uint64_t>(sysconf(_SC_PAGE_SIZE));
  for (int i = o.cpu_first_ordinal; i < o.cpu_first_ordinal + o.cpu_executors; ++i) {
    CpuExecutorOptions c;
    c.threads = o.cpu_threads;
    c.ordinal = i;
    c.kept_rows_bytes = kept_rows_budget(o.kept_rows_mb, host);
    // Every executor of the host shares one cache: a kernel is built once.
    c.cache_dir = o.cache_dir.empty() ? "" : o.cache_dir + "/kernels";
    c.compile_cache_bytes = o.compile_cache_mb << 20;
    c.compile_timeout_s = o.compile_timeout_s;
    out.push_back(make_cpu_executor(c));
  }
  return out;
}

}  // namespace lizard
