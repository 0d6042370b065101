// CudaExecutor: the Executor of one GPU, through the CUDA driver API.  This
// header is private to src/exec/cuda/: the rest of lizard creates GPU
// executors with make_cuda_executors (cuda_executor.h) and sees only the
// Executor interface.  cuda_executor.cpp holds the device's lifecycle;
// cuda_executor_builds.cpp its program builds, in two tiers;
// cuda_executor_run.cpp a run on it (rows, generators, iterations,
// outputs); cuda_executor_kept_rows.cpp the rows it keeps between runs.
//
// Threads: one executor is used by one thread at a time (the worker's run
// session that holds it); it keeps no lock.
#pragma once

#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "exec/cuda/cuda_driver.h"
#include "exec/cuda/cuda_executor.h"
#include "exec/cuda/gpu_load.h"
#include "exec/cuda/nvrtc_compiler.h"
#include "exec/cuda/pinned_staging.h"
#include "exec/kept_rows.h"
#include "exec/launch.h"
#include "exec/partition.h"
#include "exec/program_variant.h"
#include "program/layout.h"

namespace lizard {
namespace cuda {

inline constexpr uint32_t kDefaultBlock = 256;
inline constexpr int kDefaultSharedLimit = 48 * 1024;  // dynamic shared memory without opting in

inline size_t align64(size_t n) {
  return (n + 63) & ~size_t{63};
}
inline size_t align256(size_t n) {  // as cuMemAlloc aligns
  return (n + 255) & ~size_t{255};
}

// A kernel set of a program compiled for this device; `module` is null until
// loaded (and again after a context reset, which unloads every module).
struct Module {
  std::string cubin;
  CUmodule module = nullptr;
  std::vector<CUfunction> kernels;               // manifest.iterate order
  std::map<std::string, CUfunction> generators;  // manifest.generate, by name
};

// Device memory that holds kept input rows (KeptRows), freed when they are
// evicted.  A context reset frees it with the context: forget() it then.
class DeviceRows {
 public:
  DeviceRows(const CudaDriver* cu, CUdeviceptr ptr) : cu_(cu), ptr_(ptr) {}
  DeviceRows(DeviceRows&& o) noexcept : cu_(o.cu_), ptr_(o.ptr_) { o.ptr_ = 0; }
  DeviceRows& operator=(DeviceRows&&) = delete;
  ~DeviceRows() {
    if (ptr_) cu_->cuMemFree(ptr_);
  }
  CUdeviceptr ptr() const { return ptr_; }
  void forget() { ptr_ = 0; }

 private:
  const CudaDriver* cu_;
  CUdeviceptr ptr_;
};

// A run's device state.
struct Run {
  ProgramImage program;
  ParamValues params;
  int64_t rows = 0;
  int64_t first_row = 0;
  RunValues values;                 // the run's values its kernels see
  std::vector<CUdeviceptr> fields;  // manifest.dataset order; 0 when empty
  std::vector<uint64_t> field_bytes;
  std::vector<FieldInit> field_init;
  // The state and the aggregate lie in one allocation, `sections`, at the
  // same offsets as in the pinned staging, so that one copy uploads the state
  // and resets the aggregate: state | aggregate (at agg_offset()).
  CUdeviceptr sections = 0;
  CUdeviceptr state = 0;      // in sections; 0 when the state is empty
  CUdeviceptr aggregate = 0;  // in sections; 0 when the aggregate is empty
  size_t state_bytes = 0;
  size_t agg_bytes = 0;
  uint8_t* pinned = nullptr;  // state staging | aggregate identity | aggregate result
  size_t pinned_bytes = 0;
  StructLayout state_layout;
  std::vector<uint8_t> params_arg;
  std::vector<uint8_t> dataset_arg;
  std::vector<uint8_t> agg_arg;
  std::vector<uint8_t> state_arg;  // packed for each iteration
  std::vector<CUfunction> kernels;
  std::vector<LaunchConfig> launches;
  std::string variant_key;   // ProgramVariant::key of the run's build
  bool quick_build = false;  // on the quick build until the optimised one is in
  std::chrono::steady_clock::time_point next_cache_look;  // for the optimised build
  Status failed;                                          // set once an iteration failed
  bool device_lost = false;  // the context was reset: nothing left to free
  size_t agg_offset() const { return align256(state_bytes); }
  size_t sections_bytes() const { return agg_bytes ? agg_offset() + agg_bytes : state_bytes; }
  uint8_t* pinned_state() { return pinned; }
  RowSpan span(int64_t first, int64_t count) const {
    return RowSpan{first_row, std::vector<uint64_t>(fields.begin(), fields.end()), values, first,
                   count};
  }
  uint8_t* pinned_identity() { return pinned + agg_offset(); }
  uint8_t* pinned_result() { return pinned_identity() + align64(agg_bytes); }
  size_t pinned_needed() const { return agg_offset() + 2 * align64(agg_bytes) + 64; }
};

class CudaExecutor final : public Executor {
 public:
  CudaExecutor(std::shared_ptr<const CudaDriver> cu, std::shared_ptr<const NvrtcCompiler> cc,
               std::shared_ptr<const NvmlLibrary> nvml, uint64_t kept_rows_bytes = 0)
      : cu_(std::move(cu)),
        cc_(std::move(cc)),
        nvml_(std::move(nvml)),
        kept_rows_(kept_rows_bytes) {}
  ~CudaExecutor() override;

  // Retains the device's primary context and fills info().
  Status open(int ordinal);
  // Warms NVRTC up for this device's architecture on a thread of its own.
  void warm_up_compiler() {
    warm_up_ = std::async(std::launch::async, [cc = cc_, arch = info_.arch] { cc->warm_up(arch); });
  }

  const ExecutorInfo& info() const override { return info_; }
  bool lost() const override { return !lost_.ok(); }
  Status build(const ProgramImage& program) override;
  Status begin_run(const ProgramImage& program, const ParamValues& params,
                   PartitionData data) override;
  Status iterate(const SectionBuffer& state, int64_t iteration, SectionBuffer* aggregate,
                 IterationStats* stats) override;
  Status iterate_rows(const SectionBuffer& state, int64_t iteration, SectionBuffer* aggregate,
                      IterationStats* stats, int64_t first, int64_t count) override;
  Result<std::vector<std::vector<uint8_t>>> end_run(bool want_outputs) override;
  std::vector<uint64_t> output_field_sizes() const override;
  Status end_run_into(const std::vector<char*>& to) override;
  CompileStats run_compile_stats() const override { return compile_stats_; }
  void refresh_free_memory() override {
    if (make_current().ok()) read_free_memory();
  }
  void refresh_load() override {
    if (meter_ && make_current().ok()) meter_->measure(stream_, ev_end_, &info_);
  }
  std::vector<std::string> kept_rows() const override { return kept_rows_.keys(); }
  void set_kept_rows_budget(uint64_t bytes) { kept_rows_.set_budget(bytes); }
  // Whether a run whose optimised build is not ready begins on a quick build
  // (on by default; see cuda_executor_builds.cpp).
  void set_quick_builds(bool on) { quick_builds_ = on; }

  // A compile of a variant on a thread of its own, so that a run's rows
  // load while its kernels compile: what it gave and the milliseconds it took.
  struct CompileOutcome {
    Result<CompiledProgram> compiled;
    double ms = 0;
  };
  Status keep_file_rows(const std::string& key, const FileRows& where) override;
  void forget_kept_rows(const std::set<std::string>& keys) override;

 private:
  Status check(CUresult r, const std::string& what) const {
    return cu_->check(r, "GPU " + std::to_string(info_.ordinal) + ": " + what);
  }
  Status make_current() const {
    if (!lost_.ok()) return lost_;
    return check(cu_->cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
  }
  Status attach_context();
  void detach_context();
  Status fill_info();
  void read_free_memory();  // with the context current

  using PendingCompile = std::future<CompileOutcome>;
  static CompileOutcome timed_compile(const NvrtcCompiler& cc, const ProgramVariant& variant,
                                      const std::string& arch, BuildTier tier);
  // Where modules_ keeps `variant`'s build at `tier`.
  static std::string module_key(const ProgramVariant& variant, BuildTier tier);
  // Starts compiling `variant` at `tier` unless that module is loaded (then:
  // none).  `variant` must outlive the result.
  PendingCompile compile_ahead(const ProgramVariant& variant, BuildTier tier) const;
  // The build a run of `variant` over `partition_bytes` begins on, and its
  // compile: the optimised one when it is loaded, cached or has compiled;
  // else a first tier (first_tier), with the optimised one compiling in
  // optimising_; a partition too large for the fast build waits for the
  // optimised one.
  struct BuildPlan {
    BuildTier tier;
    PendingCompile compiling;
    bool compiled_before = false;  // the optimised build compiled during earlier runs
  };
  BuildPlan plan_build(const ProgramVariant& variant, uint64_t partition_bytes);
  BuildTier first_tier(const ProgramVariant& variant, uint64_t partition_bytes) const;
  // Between iterations: moves a run begun on its quick build to the
  // optimised one once that has compiled; true when it did.
  bool adopt_optimised_build(int64_t iteration);
  // The loaded module of `variant` at `tier`, compiled unless cached (or
  // taken from `ahead` when given); `stats` says which.
  Result<Module*> load_program(const ProgramVariant& variant, CompileStats* stats,
                               PendingCompile ahead = {}, BuildTier tier = BuildTier::kOptimised);
  Status load_module(const ProgramVariant& variant, Module* m);
  Status find_iterate_kernels(const ProgramImage& program, Module* m) const;
  Status find_generators(const ProgramImage& program, Module* m) const;
  // A variant's generator kernels (KernelSet::kGenerate), built apart from
  // its iterate kernels and only for runs that generate: started by
  // start_generators (compiling on a thread of its own unless loaded),
  // loaded by load_generators, which folds its compile into `stats`.
  struct GeneratorBuild {
    std::shared_ptr<const ProgramVariant> variant;  // null: none
    BuildTier tier = BuildTier::kFast;
    PendingCompile compiling;
  };
  GeneratorBuild start_generators(const ProgramVariant& variant);
  Result<Module*> load_generators(GeneratorBuild build, CompileStats* stats);

  // Evicts kept rows (never those in `protect`) until the run's buffers fit.
  Status make_room(const Run& run, const std::set<std::string>& protect);
  Status check_fits(const Run& run) const;
  // Field k's rows from the rows kept under `key`, copied on the run's stream.
  Status copy_kept_rows(const std::string& key, CUdeviceptr to, uint64_t bytes,
                        const std::string& field);
  // Keeps a copy of a run's freshly uploaded field k, if the budget allows.
  void keep_rows(const std::string& key, CUdeviceptr from, uint64_t bytes,
                 const std::set<std::string>& protect);
  // Field `name`'s rows read from their file into `to`, through the
  // staging buffers, on the run's stream.
  Status load_file_rows(const FileRows& rows, CUdeviceptr to, const std::string& name);
  Status run_generators(const Module& m, const std::vector<std::string>& names,
                        const SectionBuffer& zero_state);
  Status allocate_run(Run* run, PartitionData* data, const std::set<std::string>& protect);
  Status prepare_launches(Run* run, const Module& m);
  LaunchLimits limits() const {
    return LaunchLimits{info_.sm_count, kDefaultBlock, static_cast<uint32_t>(max_block_)};
  }
  // The kernels' dataset argument (its `iteration` set per iteration) and
  // launches for an iteration.
  struct Rows {
    std::vector<uint8_t>* dataset_arg;
    const std::vector<LaunchConfig>* launches;
  };
  Status enqueue_iteration(Run* run, const SectionBuffer& state, Rows rows);
  Status fail_iteration(CUresult r, const std::string& where);
  static std::string kernels_of(const Run& run);
  Status finish_run(bool want_outputs, const std::vector<char*>& to);
  // Output field k of the run to `to`.
  Status download_field(size_t k, char* to);
  static constexpr size_t kStagedDownloadBytes = size_t{4} << 20;
  void release_run();
  // A run's device buffers (dataset fields, state, aggregate) and its pinned
  // staging buffer, kept when it ends for the next run: freeing device memory
  // waits for the device, and a pinned allocation and its release cost about
  // a millisecond.  Each buffer the next run needs takes a kept one of its
  // size; the rest are freed once that run has allocated.
  struct KeptBuffers {
    std::vector<std::pair<CUdeviceptr, uint64_t>> device;
    uint8_t* pinned = nullptr;
    size_t pinned_bytes = 0;
  };
  // A device buffer of `bytes`: a kept one of that size, or a new one.
  CUresult take_or_allocate(CUdeviceptr* out, uint64_t bytes);
  void free_kept_device();
  void free_kept();
  // Lets the kept rows go; `freed`: a context reset has freed their memory.
  void drop_kept_rows(bool freed);
  Status reset_device();
  Status probe_device() const;

  std::shared_ptr<const CudaDriver> cu_;
  std::shared_ptr<const NvrtcCompiler> cc_;
  std::shared_ptr<const NvmlLibrary> nvml_;  // null without NVML
  std::unique_ptr<GpuLoadMeter> meter_;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  CUstream stream_ = nullptr;
  CUevent ev_begin_ = nullptr;
  CUevent ev_end_ = nullptr;
  int max_block_ = 1024;
  int shared_optin_ = kDefaultSharedLimit;
  ExecutorInfo info_;
  std::map<std::string, Module> modules_;  // by module_key()
  // Optimised builds compiling for variants whose runs began on quick ones,
  // by ProgramVariant::key; the variant is owned here for its compile.
  struct OptimisedBuild {
    std::shared_ptr<const ProgramVariant> variant;
    PendingCompile compiling;
    std::string cache_entry;  // its name in the host's compile cache
  };
  std::map<std::string, OptimisedBuild> optimising_;
  bool quick_builds_ = true;
  // NvrtcCompiler::warm_up, started when the device is opened (the first
  // executor of the process); waited for before the executor goes.
  std::future<void> warm_up_;
  std::unique_ptr<Run> run_;
  KeptBuffers kept_;  // from the last run, with the context current
  KeptRows<DeviceRows> kept_rows_;
  std::unique_ptr<PinnedStaging> staging_;  // made at the first load from a file
  CompileStats compile_stats_;
  Status lost_;  // set when the device cannot be used again in this process
};

}  // namespace cuda
}  // namespace lizard
