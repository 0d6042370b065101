// CudaExecutor's runs: rows and generators in, iterations, outputs out
// (the class is declared in cuda_device_executor.h).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "exec/cuda/cuda_device_executor.h"
#include "program/reducers.h"

namespace lizard {
namespace cuda {

// --- begin_run --------------------------------------------------------------

Status CudaExecutor::begin_run(const ProgramImage& program, const ParamValues& params,
                               PartitionData data) {
  LIZARD_RETURN_IF_ERROR(make_current());
  release_run();
  compile_stats_ = CompileStats{};
  LIZARD_ASSIGN_OR_RETURN(PartitionLayout layout, check_partition(program.manifest, params, data));
  uint64_t partition_bytes = 0;
  for (uint64_t b : layout.field_bytes) partition_bytes += b;
  // The kernels compile (when they must) while the rows load: the iterate
  // kernels, and beside them the generators when the run generates.
  const ProgramVariant all = variant_for_run(program, params);
  GeneratorBuild generators;
  if (!data.generators.empty()) generators = start_generators(all);
  const ProgramVariant variant = kernel_set(all, KernelSet::kIterate);
  BuildPlan plan = plan_build(variant, partition_bytes);
  auto run = std::make_unique<Run>();
  run->program = program;
  run->params = params;
  run->rows = data.rows;
  run->first_row = data.first_row;
  run->variant_key = variant.key;
  run->quick_build = plan.tier != BuildTier::kOptimised;
  const Manifest& man = run->program.manifest;
  run->field_bytes = layout.field_bytes;
  run->field_init = layout.init;
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer state, make_section(man.state, man, params));
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer agg, make_section(man.aggregate, man, params));
  run->state_bytes = state.bytes.size();
  run->agg_bytes = agg.bytes.size();
  run->state_layout = state_layout(man);
  std::set<std::string> protect;  // kept rows this run copies
  for (size_t k = 0; k < data.fields.size(); ++k)
    if (data.named_only(k)) protect.insert(data.row_key(k));
  LIZARD_RETURN_IF_ERROR(make_room(*run, protect));
  run_ = std::move(run);
  Status st = allocate_run(run_.get(), &data, protect);
  Module* m = nullptr;
  if (st.ok()) {
    Result<Module*> loaded =
        load_program(variant, &compile_stats_, std::move(plan.compiling), plan.tier);
    st = loaded.status();
    if (st.ok()) m = *loaded;
    // Compiled while earlier runs used the quick build: this run waited for nothing.
    if (st.ok() && plan.compiled_before) compile_stats_ = CompileStats{};
    if (st.ok()) st = prepare_launches(run_.get(), *m);
  }
  Module* gen = nullptr;
  if (st.ok() && generators.variant) {
    Result<Module*> loaded = load_generators(std::move(generators), &compile_stats_);
    st = loaded.status();
    if (st.ok()) gen = *loaded;
  }
  if (st.ok()) {
    set_identity(&agg);
    std::memcpy(run_->pinned_identity(), agg.bytes.data(), agg.bytes.size());
    run_->params_arg = pack_params(params_layout(man), params);
    run_->values = data;
    auto arg = dataset_arg(man, params, run_->span(0, run_->rows));
    st = arg.status();
    if (st.ok()) {
      run_->dataset_arg = std::move(arg).value();
      run_->agg_arg = pack_section(aggregate_layout(man), agg, run_->aggregate);
      if (gen) st = run_generators(*gen, data.generators, state);
    }
  }
  // The rows' upload (and a kept copy of them) is still in flight: it is
  // part of loading the run, not of its first iteration, and fails here.
  if (st.ok()) st = check(cu_->cuStreamSynchronize(stream_), "uploading the partition's rows");
  if (!st.ok()) release_run();
  read_free_memory();
  return st;
}

// Runs the named generator kernels once over the partition, with a zero
// state and aggregate, and waits for them.
Status CudaExecutor::run_generators(const Module& m, const std::vector<std::string>& names,
                                    const SectionBuffer& zero_state) {
  if (names.empty()) return Status::Ok();
  Run* run = run_.get();
  LIZARD_ASSIGN_OR_RETURN(
      std::vector<GeneratorLaunch> launches,
      generator_launches(run->program.manifest, run->params, names, run->rows, limits()));
  if (run->state_bytes)
    LIZARD_RETURN_IF_ERROR(
        check(cu_->cuMemsetD8Async(run->state, 0, run->state_bytes, stream_), "zeroing the state"));
  if (run->agg_bytes)
    LIZARD_RETURN_IF_ERROR(check(cu_->cuMemsetD8Async(run->aggregate, 0, run->agg_bytes, stream_),
                                 "zeroing the aggregate"));
  std::vector<uint8_t> state_arg = pack_section(run->state_layout, zero_state, run->state);
  for (const GeneratorLaunch& g : launches) {
    const std::string& name = g.step->kernel;
    auto f = m.generators.find(name);
    if (f == m.generators.end())
      return internal_error("generator kernel '" + name + "' was not loaded");
    const LaunchConfig& c = g.config;
    if (c.empty()) continue;
    void* args[] = {run->params_arg.data(), run->dataset_arg.data(), state_arg.data(),
                    run->agg_arg.data()};
    CUresult r = cu_->cuLaunchKernel(f->second, c.grid[0], c.grid[1], c.grid[2], c.block[0],
                                     c.block[1], c.block[2], static_cast<unsigned>(c.shared_bytes),
                                     stream_, args, nullptr);
    if (r == CUDA_SUCCESS) r = cu_->cuStreamSynchronize(stream_);
    if (r != CUDA_SUCCESS) return fail_iteration(r, "generator kernel '" + name + "'");
  }
  return Status::Ok();
}

Status CudaExecutor::make_room(const Run& run, const std::set<std::string>& protect) {
  Status st = check_fits(run);
  if (!st.ok() && st.code() == Code::kTooLarge && !kept_.device.empty()) {
    free_kept_device();  // the last run's buffers: this one may need other sizes
    st = check_fits(run);
  }
  while (!st.ok() && st.code() == Code::kTooLarge && kept_rows_.evict_one(protect))
    st = check_fits(run);
  return st;
}

Status CudaExecutor::check_fits(const Run& run) const {
  size_t free = 0, total = 0;
  LIZARD_RETURN_IF_ERROR(check(cu_->cuMemGetInfo(&free, &total), "cuMemGetInfo"));
  const Manifest& man = run.program.manifest;
  uint64_t need = run.state_bytes + run.agg_bytes;
  for (size_t k = 0; k < man.dataset.size(); ++k) need += run.field_bytes[k];
  if (need <= free) return Status::Ok();
  // Name the field at which the partition stops fitting.
  uint64_t sum = run.state_bytes + run.agg_bytes;
  size_t at = 0;
  while (at + 1 < man.dataset.size() && sum + run.field_bytes[at] <= free)
    sum += run.field_bytes[at++];
  std::string field = man.dataset.empty() ? std::string("state and aggregate")
                                          : "dataset field '" + man.dataset[at].name + "' needs " +
                                                std::to_string(run.field_bytes[at]) + " bytes";
  return too_large("partition of " + std::to_string(run.rows) + " rows does not fit on GPU " +
                   std::to_string(info_.ordinal) + " (" + info_.name + "): " + field +
                   "; the partition needs " + std::to_string(need) + " bytes in all and " +
                   std::to_string(free) + " bytes of device memory are free");
}

Status CudaExecutor::allocate_run(Run* run, PartitionData* data,
                                  const std::set<std::string>& protect) {
  const Manifest& man = run->program.manifest;
  run->fields.assign(man.dataset.size(), 0);
  for (size_t k = 0; k < man.dataset.size(); ++k) {
    const FieldSpec& f = man.dataset[k];
    const uint64_t bytes = run->field_bytes[k];
    if (bytes == 0) continue;
    CUresult r = take_or_allocate(&run->fields[k], bytes);
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
      return too_large("GPU " + std::to_string(info_.ordinal) + ": dataset field '" + f.name +
                       "' needs " + std::to_string(bytes) + " bytes: " + cu_->error_text(r));
    LIZARD_RETURN_IF_ERROR(check(r, "allocating dataset field '" + f.name + "'"));
    const std::string& key = data->row_key(k);
    if (run->field_init[k] == FieldInit::kUpload && data->named_only(k)) {
      LIZARD_RETURN_IF_ERROR(copy_kept_rows(key, run->fields[k], bytes, f.name));
    } else if (run->field_init[k] == FieldInit::kUpload && data->from_file(k)) {
      LIZARD_RETURN_IF_ERROR(load_file_rows(data->file_rows[k], run->fields[k], f.name));
      if (!key.empty() && kept_rows_.budget() > 0) keep_rows(key, run->fields[k], bytes, protect);
    } else if (run->field_init[k] == FieldInit::kUpload) {
      // On the run's stream, which the kernels and a kept copy follow; from
      // pageable memory the call returns once the rows are staged, so the
      // host copy may go.  Its size was checked by check_partition.
      LIZARD_RETURN_IF_ERROR(
          check(cu_->cuMemcpyHtoDAsync(run->fields[k], data->field_rows(k).data(), bytes, stream_),
                "uploading dataset field '" + f.name + "'"));
      if (!key.empty() && kept_rows_.budget() > 0) keep_rows(key, run->fields[k], bytes, protect);
    } else {
      // On the run's stream: cuMemsetD8 would go to the legacy default stream,
      // which the run's non-blocking stream does not wait for, and could still
      // be zeroing the field while a generator kernel fills it.
      LIZARD_RETURN_IF_ERROR(check(cu_->cuMemsetD8Async(run->fields[k], 0, bytes, stream_),
                                   "zeroing dataset field '" + f.name + "'"));
    }
    std::vector<uint8_t>().swap(data->fields[k]);  // the host copy is no longer needed
  }
  if (run->sections_bytes()) {
    LIZARD_RETURN_IF_ERROR(check(take_or_allocate(&run->sections, run->sections_bytes()),
                                 "allocating the state and aggregate"));
    if (run->state_bytes) run->state = run->sections;
    if (run->agg_bytes) run->aggregate = run->sections + run->agg_offset();
  }
  free_kept_device();  // those of the last run that this one did not take
  const size_t pinned = run->pinned_needed();
  if (kept_.pinned && kept_.pinned_bytes >= pinned) {
    run->pinned = kept_.pinned;
    run->pinned_bytes = kept_.pinned_bytes;
    kept_.pinned = nullptr;
    return Status::Ok();
  }
  if (kept_.pinned) cu_->cuMemFreeHost(kept_.pinned);
  kept_.pinned = nullptr;
  void* host = nullptr;
  LIZARD_RETURN_IF_ERROR(
      check(cu_->cuMemHostAlloc(&host, pinned, CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc"));
  run->pinned = static_cast<uint8_t*>(host);
  run->pinned_bytes = pinned;
  return Status::Ok();
}

Status CudaExecutor::load_file_rows(const FileRows& rows, CUdeviceptr to, const std::string& name) {
  if (!staging_) {
    auto made = PinnedStaging::create(cu_);
    if (!made.ok()) return made.status().with_context("GPU " + std::to_string(info_.ordinal));
    staging_ = std::move(made).value();
  }
  const auto t0 = std::chrono::steady_clock::now();
  LoadTimes times;
  Status st = staging_->load(rows, to, stream_, file_read_threads(), &times);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  spdlog::debug(
      "GPU {}: {} bytes of '{}' from {} in {:.1f} ms ({:.2f} GB/s): read {:.1f} ms, "
      "waiting for a buffer {:.1f} ms, queueing copies {:.1f} ms",
      info_.ordinal, rows.size, name, rows.path, ms, rows.size / (ms * 1e6), times.read_ms,
      times.wait_ms, times.send_ms);
  return st.with_context("dataset field '" + name + "'");
}

CUresult CudaExecutor::take_or_allocate(CUdeviceptr* out, uint64_t bytes) {
  for (auto it = kept_.device.begin(); it != kept_.device.end(); ++it) {
    if (it->second != bytes) continue;
    *out = it->first;
    kept_.device.erase(it);
    return CUDA_SUCCESS;
  }
  return cu_->cuMemAlloc(out, bytes);
}

void CudaExecutor::free_kept_device() {
  for (const auto& [ptr, bytes] : kept_.device) cu_->cuMemFree(ptr);
  kept_.device.clear();
}

void CudaExecutor::free_kept() {
  free_kept_device();
  if (kept_.pinned) cu_->cuMemFreeHost(kept_.pinned);
  kept_ = KeptBuffers{};
}

void CudaExecutor::drop_kept_rows(bool freed) {
  if (freed) kept_rows_.for_each([](DeviceRows& r) { r.forget(); });
  kept_rows_.clear();
}

Status CudaExecutor::prepare_launches(Run* run, const Module& m) {
  const Manifest& man = run->program.manifest;
  LIZARD_ASSIGN_OR_RETURN(std::vector<LaunchConfig> launches,
                          iterate_launches(man, run->params, run->rows, limits()));
  for (size_t k = 0; k < man.iterate.size(); ++k) {
    const KernelStep& step = man.iterate[k];
    const LaunchConfig& c = launches[k];
    if (c.shared_bytes > static_cast<uint64_t>(shared_optin_))
      return invalid_argument("kernel '" + step.kernel + "': shared_bytes " +
                              std::to_string(c.shared_bytes) + " exceeds the " +
                              std::to_string(shared_optin_) + " bytes per block of " + info_.arch);
    // Dynamic shared memory beyond what the kernel's static shared memory
    // leaves of the default 48 KiB needs the limit raised.
    int static_bytes = 0;
    if (c.shared_bytes > 0 &&
        cu_->cuFuncGetAttribute(&static_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, m.kernels[k]) !=
            CUDA_SUCCESS)
      static_bytes = 0;
    if (c.shared_bytes + static_cast<uint64_t>(static_bytes) > static_cast<uint64_t>(shared_optin_))
      return invalid_argument("kernel '" + step.kernel + "': shared_bytes " +
                              std::to_string(c.shared_bytes) + " and its " +
                              std::to_string(static_bytes) +
                              " bytes of static shared memory exceed the " +
                              std::to_string(shared_optin_) + " bytes per block of " + info_.arch);
    if (c.shared_bytes + static_cast<uint64_t>(static_bytes) >
        static_cast<uint64_t>(kDefaultSharedLimit)) {
      LIZARD_RETURN_IF_ERROR(check(
          cu_->cuFuncSetAttribute(m.kernels[k], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                  static_cast<int>(c.shared_bytes)),
          "kernel '" + step.kernel + "': raising its shared memory limit"));
    }
    run->launches.push_back(c);
    run->kernels.push_back(m.kernels[k]);
  }
  return Status::Ok();
}

// --- iterate ----------------------------------------------------------------

Status CudaExecutor::iterate(const SectionBuffer& state, int64_t iteration,
                             SectionBuffer* aggregate, IterationStats* stats) {
  if (!run_) return no_run_error("iterate");
  return iterate_rows(state, iteration, aggregate, stats, 0, run_->rows);
}

Status CudaExecutor::iterate_rows(const SectionBuffer& state, int64_t iteration,
                                  SectionBuffer* aggregate, IterationStats* stats, int64_t first,
                                  int64_t count) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!run_) return no_run_error("iterate");
  LIZARD_RETURN_IF_ERROR(check_row_range(run_->rows, first, count));
  if (!run_->failed.ok()) return run_->failed;
  if (!lost_.ok()) return lost_;
  LIZARD_RETURN_IF_ERROR(check_sections(state, *aggregate, run_->state_bytes, run_->agg_bytes));
  LIZARD_RETURN_IF_ERROR(make_current());
  const bool switched = first == 0 && adopt_optimised_build(iteration);
  Rows rows{&run_->dataset_arg, &run_->launches};
  KernelArgs slice;
  if (first != 0 || count != run_->rows) {
    LIZARD_ASSIGN_OR_RETURN(slice, kernel_args(run_->program.manifest, run_->params,
                                               run_->span(first, count), limits()));
    rows = Rows{&slice.dataset, &slice.launches};
  }
  // Launches copy their arguments: the kernels of this iteration see this number.
  set_dataset_iteration(rows.dataset_arg, iteration);
  Status st = enqueue_iteration(run_.get(), state, rows);
  if (!st.ok()) return st;
  CUresult r = cu_->cuStreamSynchronize(stream_);
  if (r != CUDA_SUCCESS) return fail_iteration(r, kernels_of(*run_));
  std::memcpy(aggregate->bytes.data(), run_->pinned_result(), run_->agg_bytes);
  if (stats) {
    float ms = 0;
    if (cu_->cuEventElapsedTime(&ms, ev_begin_, ev_end_) == CUDA_SUCCESS) stats->kernel_ms = ms;
    stats->total_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    stats->switched_build = switched;
  }
  return Status::Ok();
}

// Queues the state upload, the aggregate reset, the kernels and the result
// copy.  On a driver error, fails the iteration, naming the work that
// failed.  Nothing is built on the way when nothing fails.
Status CudaExecutor::enqueue_iteration(Run* run, const SectionBuffer& state, Rows rows) {
  auto step = [&](CUresult r, const char* what, size_t kernel = SIZE_MAX) {
    if (r == CUDA_SUCCESS) return Status::Ok();
    std::string where = what;
    if (kernel != SIZE_MAX) where += " '" + run->program.manifest.iterate[kernel].kernel + "'";
    return fail_iteration(r, where);
  };
  // One copy uploads the state and resets the aggregate to its identity.
  if (run->state_bytes) std::memcpy(run->pinned_state(), state.bytes.data(), run->state_bytes);
  if (run->sections_bytes())
    LIZARD_RETURN_IF_ERROR(step(
        cu_->cuMemcpyHtoDAsync(run->sections, run->pinned_state(), run->sections_bytes(), stream_),
        "uploading the state and resetting the aggregate"));
  pack_section_into(run->state_layout, state, run->state, &run->state_arg);
  LIZARD_RETURN_IF_ERROR(step(cu_->cuEventRecord(ev_begin_, stream_), "cuEventRecord"));
  for (size_t k = 0; k < run->kernels.size(); ++k) {
    const LaunchConfig& c = (*rows.launches)[k];
    if (c.empty()) continue;
    void* args[] = {run->params_arg.data(), rows.dataset_arg->data(), run->state_arg.data(),
                    run->agg_arg.data()};
    LIZARD_RETURN_IF_ERROR(
        step(cu_->cuLaunchKernel(run->kernels[k], c.grid[0], c.grid[1], c.grid[2], c.block[0],
                                 c.block[1], c.block[2], static_cast<unsigned>(c.shared_bytes),
                                 stream_, args, nullptr),
             "launching kernel", k));
  }
  LIZARD_RETURN_IF_ERROR(step(cu_->cuEventRecord(ev_end_, stream_), "cuEventRecord"));
  if (run->agg_bytes) {
    LIZARD_RETURN_IF_ERROR(
        step(cu_->cuMemcpyDtoHAsync(run->pinned_result(), run->aggregate, run->agg_bytes, stream_),
             "copying the aggregate back"));
  }
  return Status::Ok();
}

// What an iteration's failure at its end names: its kernels.
std::string CudaExecutor::kernels_of(const Run& run) {
  std::string names;
  for (const auto& step : run.program.manifest.iterate)
    names += (names.empty() ? "" : ", ") + step.kernel;
  return (run.program.manifest.iterate.size() == 1 ? "kernel " : "kernels ") + names;
}

Status CudaExecutor::fail_iteration(CUresult r, const std::string& where) {
  Status st = runtime_error("GPU " + std::to_string(info_.ordinal) + " (" + info_.name +
                            "): " + where + " failed: " + cu_->error_text(r));
  if (CudaDriver::is_sticky(r)) {
    Status reset = reset_device();
    st =
        runtime_error(st.message() + (reset.ok() ? "; the GPU was reset" : "; " + reset.message()));
    run_->failed = st;
  } else {
    cu_->cuStreamSynchronize(stream_);  // drain what was queued before the error
  }
  return st;
}

// A kernel fault leaves the context unusable: reset it, which frees every
// allocation and module, and start over with a fresh one.  Where the driver
// keeps the fault for the whole process, the device is marked lost and every
// later call says that the process must restart.
Status CudaExecutor::reset_device() {
  if (run_) {
    run_->device_lost = true;
    run_->fields.clear();
    run_->sections = run_->state = run_->aggregate = 0;
    run_->pinned = nullptr;
  }
  kept_ = KeptBuffers{};  // the reset frees them with the context
  if (staging_) staging_->forget();
  staging_.reset();
  drop_kept_rows(/*freed=*/true);
  for (auto& [hash, m] : modules_) m.module = nullptr;
  if (meter_) meter_->forget_module();
  ev_begin_ = ev_end_ = nullptr;
  stream_ = nullptr;
  Status st = check(cu_->cuDevicePrimaryCtxReset(dev_), "cuDevicePrimaryCtxReset");
  detach_context();
  if (st.ok()) st = attach_context();
  if (st.ok()) st = probe_device();
  if (st.ok()) return st;
  detach_context();
  lost_ = unavailable("GPU " + std::to_string(info_.ordinal) + " (" + info_.name +
                      ") cannot be used again after a kernel fault (" + st.message() +
                      "): the worker process must restart to use it");
  return lost_;
}

// A small allocation and a synchronisation: fails when the context still
// carries a fault.
Status CudaExecutor::probe_device() const {
  CUdeviceptr p = 0;
  LIZARD_RETURN_IF_ERROR(check(cu_->cuMemAlloc(&p, 256), "probe allocation"));
  cu_->cuMemFree(p);
  return check(cu_->cuCtxSynchronize(), "probe synchronisation");
}

void CudaExecutor::release_run() {
  if (!run_) return;
  if (!run_->device_lost) {
    cu_->cuStreamSynchronize(stream_);
    free_kept();  // the next run takes this run's buffers instead
    for (size_t k = 0; k < run_->fields.size(); ++k)
      if (run_->fields[k]) kept_.device.emplace_back(run_->fields[k], run_->field_bytes[k]);
    if (run_->sections) kept_.device.emplace_back(run_->sections, run_->sections_bytes());
    kept_.pinned = run_->pinned;
    kept_.pinned_bytes = run_->pinned_bytes;
  }
  run_.reset();
}

}  // namespace cuda
}  // namespace lizard
