// CpuExecutor: the Executor that runs a program's unmodified kernel.cu on the
// host's cores.  build() compiles the kernels with the host compiler against
// include/lizard/cuda_cpu.h (see kernel_source.h) and loads the library;
// iterate() splits each kernel's blocks over a persistent pool of threads.
//
//   CpuExecutorOptions o;  // all cores, default cache directory
//   std::unique_ptr<Executor> cpu = make_cpu_executor(o);
//   cpu->build(program); cpu->begin_run(program, params, std::move(partition));
//   cpu->iterate(state, &aggregate, &stats); cpu->end_run(true);
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/shared_library.h"
#include "exec/cpu/thread_pool.h"
#include "exec/executor.h"
#include "exec/launch.h"

// The launch of a range of blocks; mirrors lizard_cpu_launch in cuda_cpu.h.
extern "C" {
struct lizard_cpu_launch_abi {
  uint32_t grid[3];
  uint32_t block[3];
  uint64_t shared_bytes;
  uint64_t first_block;
  uint64_t end_block;
};
}
static_assert(sizeof(lizard_cpu_launch_abi) == 48, "lizard_cpu_launch layout");

namespace lizard {

struct CpuExecutorOptions {
  int threads = 0;        // 0: all cores
  std::string cache_dir;  // empty: a directory under the system's temporary directory
};

using CpuKernelFn = int (*)(const lizard_cpu_launch_abi* launch, const void* const* args, char* err,
                            size_t err_len);

class CpuExecutor : public Executor {
 public:
  explicit CpuExecutor(const CpuExecutorOptions& o);
  ~CpuExecutor() override;

  const ExecutorInfo& info() const override { return info_; }
  Status build(const ProgramImage& program) override;
  Status begin_run(const ProgramImage& program, const ParamValues& params,
                   PartitionData data) override;
  Status iterate(const SectionBuffer& state, SectionBuffer* aggregate,
                 IterationStats* stats) override;
  Status iterate_rows(const SectionBuffer& state, SectionBuffer* aggregate, IterationStats* stats,
                      int64_t first, int64_t count) override;
  Result<std::vector<std::vector<uint8_t>>> end_run(bool want_outputs) override;
  void refresh_free_memory() override;

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

  Result<std::shared_ptr<Module>> load(const ProgramImage& program, const std::string& library);
  Status launch(const Step& step, const void* const* args);
  Status run_generators(const std::vector<std::string>& names);

  ExecutorInfo info_;
  std::string cache_dir_;
  ThreadPool pool_;
  std::map<std::string, std::shared_ptr<Module>> modules_;  // by program hash
  std::unique_ptr<Run> run_;
};

std::unique_ptr<Executor> make_cpu_executor(const CpuExecutorOptions& o);

}  // namespace lizard
