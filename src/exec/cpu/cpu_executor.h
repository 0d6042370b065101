// CpuExecutor: the Executor that runs a program's unmodified kernel.cu on the
// host's cores.  build() compiles the kernels with the host compiler against
// cuda_cpu.h (see kernel_source.h) and loads the library;
// iterate() splits each kernel's blocks over a persistent pool of threads.
//
//   CpuExecutorOptions o;  // all cores, default cache directory
//   std::unique_ptr<Executor> cpu = make_cpu_executor(o);
//   cpu->build(program); cpu->begin_run(program, params, std::move(partition));
//   cpu->iterate(state, iteration, &aggregate, &stats); cpu->end_run(true);
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/shared_library.h"
#include "exec/cpu/cuda_cpu_launch_abi.h"
#include "exec/cpu/kept_host_rows.h"
#include "exec/cpu/thread_pool.h"
#include "exec/executor.h"
#include "exec/host_compiler.h"
#include "exec/kept_rows.h"
#include "exec/launch.h"
#include "exec/partition.h"
#include "exec/program_variant.h"

namespace lizard {

struct CpuExecutorOptions {
  int threads = 0;        // 0: all cores
  std::string cache_dir;  // compiled kernels; empty: default_cache_root() + "/kernels"
  uint64_t compile_cache_bytes = 2048ull << 20;  // the bound of cache_dir (exec/compile_cache.h)
  int compile_timeout_s = 120;                   // the longest one compile may take
  int ordinal = 0;                               // which of the worker's CPU executors this is
  // Input rows kept for later runs over them (kept_rows()); 0: none.
  uint64_t kept_rows_bytes = 0;
};

using CpuKernelFn = int (*)(const lizard_cpu_launch* launch, const void* const* args, char* err,
                            size_t err_len);

class CpuExecutor : public Executor {
 public:
  explicit CpuExecutor(const CpuExecutorOptions& o);
  ~CpuExecutor() override;

  const ExecutorInfo& info() const override { return info_; }
  Status build(const ProgramImage& program) override;
  Status begin_run(const ProgramImage& program, const ParamValues& params,
                   PartitionData data) override;
  Status iterate(const SectionBuffer& state, int64_t iteration, SectionBuffer* aggregate,
                 IterationStats* stats) override;
  Status iterate_rows(const SectionBuffer& state, int64_t iteration, SectionBuffer* aggregate,
                      IterationStats* stats, int64_t first, int64_t count) override;
  Result<std::vector<std::vector<uint8_t>>> end_run(bool want_outputs) override;
  void free_ended_run() override;
  CompileStats run_compile_stats() const override { return compile_stats_; }
  void refresh_free_memory() override;
  std::vector<std::string> kept_rows() const override { return kept_.keys(); }
  Status keep_file_rows(const std::string& key, const FileRows& where) override;
  void forget_kept_rows(const std::set<std::string>& keys) override;
  // True once a kernel library's static initialisation did not finish: its
  // thread holds the dynamic loader, so the process must be replaced.
  bool lost() const override { return stuck_loading_; }

 private:
  struct Module {
    SharedLibrary library;
    std::map<std::string, CpuKernelFn> kernels;
  };
  struct Step {
    std::string kernel;
    CpuKernelFn fn;
    LaunchConfig config;
  };
  struct Run;

  // The module of `variant`, compiled unless cached; `stats` says which.
  Result<std::shared_ptr<Module>> module_for(const ProgramVariant& variant, CompileStats* stats);
  Result<std::shared_ptr<Module>> load(const ProgramImage& program, const std::string& library);
  Status launch(const Step& step, const void* const* args);
  // The steps of `run`'s kernels with `launches` (manifest.iterate order).
  static std::vector<Step> steps_of(const Run& run, const std::vector<LaunchConfig>& launches);
  LaunchLimits limits() const { return LaunchLimits{info_.sm_count, 256, 1024}; }
  Status run_generators(const std::vector<std::string>& names);
  // Maps the kept rows of fields named by key alone for the run (per field:
  // a view, or none), and keeps the keyed rows `data` carries for later runs.
  Result<std::vector<RowsView>> use_kept_rows(PartitionData* data);

  ExecutorInfo info_;
  HostCompiler compiler_;
  ThreadPool pool_;
  std::map<std::string, std::shared_ptr<Module>> modules_;  // by ProgramVariant::key
  std::unique_ptr<Run> run_;
  std::unique_ptr<Run> ended_run_;  // end_run's, until free_ended_run
  CompileStats compile_stats_;
  KeptRows<KeptHostRows> kept_;  // in memory files, used in place
  int load_timeout_s_;           // the longest loading a kernel library may take
  bool stuck_loading_ = false;
};

std::unique_ptr<Executor> make_cpu_executor(const CpuExecutorOptions& o);

}  // namespace lizard
