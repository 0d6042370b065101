#include "exec/cpu/cpu_executor.h"

#include <unistd.h>
#include <cstring>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <thread>

#include "exec/cpu/kernel_source.h"
#include "exec/host_compiler.h"
#include "exec/partition.h"
#include "program/kernel_set.h"
#include "program/reducers.h"

namespace lizard {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
  }
  return "unknown CPU";
}

// A /proc/meminfo value in bytes (0 when absent).
uint64_t meminfo(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  std::string name;
  uint64_t kb = 0;
  std::string unit;
  while (in >> name >> kb) {
    std::getline(in, unit);
    if (name == key + ":") return kb * 1024;
  }
  return 0;
}

int resolve_threads(int threads) {
  if (threads > 0) return threads;
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

struct CpuExecutor::Run {
  ProgramImage program;
  ParamValues params;
  std::shared_ptr<Module> module;
  std::vector<std::vector<uint8_t>> fields;  // manifest.dataset order
  std::vector<RowsView> kept_views;          // per field: kept rows used in place, or none
  StructLayout state_layout, aggregate_layout;
  std::vector<uint8_t> params_packed, dataset_packed;
  std::vector<uint8_t> state_bytes;  // the kernels' copy of the state
  std::vector<Step> steps;
  int64_t rows = 0, first_row = 0;
  RunValues values;                  // the run's values its kernels see
  std::vector<uint64_t> field_ptrs;  // row 0 of each field
  size_t state_size = 0, aggregate_size = 0;
  // Each kernel's time per block at its last launch, in microseconds, from
  // which launch() decides how many of the pool's threads to wake.
  std::map<CpuKernelFn, double> block_us;
  RowSpan span(int64_t first, int64_t count) const {
    return RowSpan{first_row, field_ptrs, values, first, count};
  }
};

CpuExecutor::CpuExecutor(const CpuExecutorOptions& o)
    : compiler_(o.cache_dir.empty() ? default_cache_root() + "/kernels" : o.cache_dir,
                o.compile_cache_bytes, o.compile_timeout_s),
      pool_(resolve_threads(o.threads)),
      kept_(o.kept_rows_bytes),
      load_timeout_s_(o.compile_timeout_s) {
  info_.kind = "cpu";
  info_.name = cpu_model();
  info_.ordinal = o.ordinal;
  info_.sm_count = pool_.size();
  info_.weight = pool_.size();
  info_.total_memory = meminfo("MemTotal");
  info_.free_memory = meminfo("MemAvailable");
}

CpuExecutor::~CpuExecutor() = default;

void CpuExecutor::refresh_free_memory() {
  info_.free_memory = meminfo("MemAvailable");
}

Status CpuExecutor::build(const ProgramImage& program) {
  CompileStats stats;
  return module_for(variant_for_build(program), &stats).status();
}

Result<std::shared_ptr<CpuExecutor::Module>> CpuExecutor::module_for(const ProgramVariant& variant,
                                                                     CompileStats* stats) {
  *stats = CompileStats{};
  if (auto it = modules_.find(variant.key); it != modules_.end()) return it->second;
  if (stuck_loading_)
    return unavailable("this executor is being replaced: a kernel library never finished loading");
  const ProgramImage& program = variant.image;
  LIZARD_ASSIGN_OR_RETURN(CpuBuildPlan plan, plan_cpu_build(program));
  const Clock::time_point start = Clock::now();
  bool cached = false;
  // Among its program's own entries of the cache (CompileCache::owned_by).
  const HostCompiler compiler = compiler_.for_owner(program.hash);
  Result<std::string> library =
      compiler.build_shared(plan.files, plan.units, plan.flags, &cached, &plan.pch);
  if (!library.ok()) {
    if (library.status().code() != Code::kCompileError) return library.status();
    // A kernel the manifest names but the source lacks fails in the
    // generated entry file: say so in the manifest's terms.
    auto unit = program.sources.find(program.manifest.cuda_source);
    if (unit != program.sources.end()) {
      const std::string missing = missing_kernel_note(program.manifest, unit->second);
      if (!missing.empty()) return compile_error(program.manifest.cuda_source + ": " + missing);
    }
    return compile_error(program.manifest.cuda_source + ": build failed for the CPU backend:\n" +
                         library.status().message() + specialised_note(variant));
  }
  Result<std::shared_ptr<Module>> loaded = load(program, *library);
  if (!loaded.ok() && !stuck_loading_ && !std::filesystem::exists(*library)) {
    // Evicted from the host's cache by another process between the lookup
    // and the load: built (or found) once more.
    library = compiler.build_shared(plan.files, plan.units, plan.flags, &cached, &plan.pch);
    if (!library.ok()) return library.status();
    loaded = load(program, *library);
  }
  LIZARD_ASSIGN_OR_RETURN(std::shared_ptr<Module> module, std::move(loaded));
  stats->cache_hit = cached;
  stats->compile_ms = cached ? 0 : ms_since(start);
  modules_[variant.key] = module;
  return module;
}

Result<std::shared_ptr<CpuExecutor::Module>> CpuExecutor::load(const ProgramImage& program,
                                                               const std::string& library) {
  auto module = std::make_shared<Module>();
  // Its static initialisers are the program's: bounded like its compile.
  auto opened = SharedLibrary::open_within(library, load_timeout_s_ * 1000);
  if (!opened.ok() && opened.status().code() == Code::kCancelled) {
    stuck_loading_ = true;
    return compile_error(program.manifest.cuda_source +
                         ": the program's static initialisation did not finish within " +
                         std::to_string(load_timeout_s_) +
                         " s (--compile-timeout): a constructor or initialiser of a global in "
                         "its sources never returned; its executor is replaced");
  }
  LIZARD_ASSIGN_OR_RETURN(module->library, std::move(opened));
  for (const auto* steps : {&program.manifest.iterate, &program.manifest.generate})
    for (const KernelStep& step : *steps) {
      const std::string symbol = cpu_kernel_symbol(step.kernel);
      auto fn = module->library.symbol<CpuKernelFn>(symbol.c_str());
      if (!fn) return internal_error(library + " does not export " + symbol);
      module->kernels[step.kernel] = fn;
    }
  return module;
}

Status CpuExecutor::begin_run(const ProgramImage& program, const ParamValues& params,
                              PartitionData data) {
  ended_run_.reset();
  const ProgramVariant variant = variant_for_run(program, params);
  std::shared_ptr<Module> module;
  Status read;
  bool reads_files = false;
  for (size_t k = 0; k < data.fields.size(); ++k) reads_files = reads_files || data.from_file(k);
  if (modules_.count(variant.key) || !reads_files) {
    LIZARD_ASSIGN_OR_RETURN(module, module_for(variant, &compile_stats_));
    read = read_file_fields(&data, file_read_threads());
  } else {  // the kernels build while the rows are read
    auto building =
        std::async(std::launch::async, [&] { return module_for(variant, &compile_stats_); });
    read = read_file_fields(&data, file_read_threads());
    LIZARD_ASSIGN_OR_RETURN(module, building.get());
  }
  LIZARD_RETURN_IF_ERROR(read);
  const Manifest& m = program.manifest;
  LIZARD_ASSIGN_OR_RETURN(std::vector<RowsView> kept_views, use_kept_rows(&data));
  LIZARD_ASSIGN_OR_RETURN(PartitionLayout layout, check_partition(m, params, data));
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer state, make_section(m.state, m, params));
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer aggregate, make_section(m.aggregate, m, params));
  auto run = std::make_unique<Run>();
  run->program = program;
  run->params = params;
  run->module = std::move(module);
  run->rows = data.rows;
  run->first_row = data.first_row;
  run->values = data;
  run->state_size = state.bytes.size();
  run->aggregate_size = aggregate.bytes.size();
  for (size_t k = 0; k < m.dataset.size(); ++k) {
    std::vector<uint8_t>& field = data.fields[k];
    if (layout.init[k] == FieldInit::kZero) field.assign(layout.field_bytes[k], 0);
    run->fields.push_back(std::move(field));
    run->kept_views.push_back(std::move(kept_views[k]));
    const uint8_t* rows =
        run->kept_views.back().data() ? run->kept_views.back().data() : run->fields.back().data();
    run->field_ptrs.push_back(reinterpret_cast<uint64_t>(rows));
  }
  const Manifest& rm = run->program.manifest;
  run->params_packed = pack_params(params_layout(rm), params);
  run->state_layout = state_layout(rm);
  run->aggregate_layout = aggregate_layout(rm);
  LIZARD_ASSIGN_OR_RETURN(KernelArgs args,
                          kernel_args(rm, params, run->span(0, run->rows), limits()));
  run->dataset_packed = std::move(args.dataset);
  run->steps = steps_of(*run, args.launches);
  run_ = std::move(run);
  return run_generators(data.generators);
}

Result<std::vector<RowsView>> CpuExecutor::use_kept_rows(PartitionData* data) {
  std::vector<RowsView> views(data->fields.size());
  for (size_t k = 0; k < data->fields.size(); ++k) {
    const std::string& key = data->row_key(k);
    if (key.empty()) continue;
    if (data->named_only(k)) {
      const KeptHostRows* kept = kept_.find(key);
      if (!kept) return not_found("this executor no longer keeps the rows " + key);
      // In place, copy-on-write: the run's kernels may write into it.
      LIZARD_ASSIGN_OR_RETURN(views[k], kept->view_for_run());
    } else if (kept_.budget() > 0 && !kept_.contains(key)) {
      const std::string_view rows = data->field_rows(k);
      auto copy = KeptHostRows::make(rows.size(), [&](uint8_t* to) {
        std::memcpy(to, rows.data(), rows.size());
        return Status::Ok();
      });
      if (copy.ok()) kept_.put(key, std::move(copy).value(), rows.size());
    }
  }
  return views;
}

Status CpuExecutor::keep_file_rows(const std::string& key, const FileRows& where) {
  if (run_)
    return Status(Code::kConflict, "the CPU executor serves a run; rows are kept between runs");
  if (kept_.find(key)) return Status::Ok();
  if (!kept_.could_keep(where.size))
    return too_large("rows of " + std::to_string(where.size) + " bytes do not fit the " +
                     std::to_string(kept_.budget()) +
                     " bytes this executor keeps (--kept-rows-mb)");
  LIZARD_ASSIGN_OR_RETURN(KeptHostRows rows,
                          KeptHostRows::make(static_cast<size_t>(where.size), [&](uint8_t* to) {
                            return read_file_rows(where, to, info_.sm_count);
                          }));
  kept_.put(key, std::move(rows), where.size);
  return Status::Ok();
}

void CpuExecutor::forget_kept_rows(const std::set<std::string>& keys) {
  for (const std::string& key : keys) kept_.erase(key);
}

std::vector<CpuExecutor::Step> CpuExecutor::steps_of(const Run& run,
                                                     const std::vector<LaunchConfig>& launches) {
  std::vector<Step> out;
  const Manifest& m = run.program.manifest;
  for (size_t k = 0; k < m.iterate.size(); ++k)
    out.push_back({m.iterate[k].kernel, run.module->kernels.at(m.iterate[k].kernel), launches[k]});
  return out;
}

Status CpuExecutor::iterate(const SectionBuffer& state, int64_t iteration, SectionBuffer* aggregate,
                            IterationStats* stats) {
  if (!run_) return no_run_error("iterate");
  return iterate_rows(state, iteration, aggregate, stats, 0, run_->rows);
}

Status CpuExecutor::iterate_rows(const SectionBuffer& state, int64_t iteration,
                                 SectionBuffer* aggregate, IterationStats* stats, int64_t first,
                                 int64_t count) {
  if (!run_) return no_run_error("iterate");
  LIZARD_RETURN_IF_ERROR(check_row_range(run_->rows, first, count));
  LIZARD_RETURN_IF_ERROR(check_sections(state, *aggregate, run_->state_size, run_->aggregate_size));
  const Clock::time_point start = Clock::now();
  std::vector<uint8_t>* dataset = &run_->dataset_packed;
  const std::vector<Step>* steps = &run_->steps;
  KernelArgs slice;
  std::vector<Step> slice_steps;
  if (first != 0 || count != run_->rows) {
    LIZARD_ASSIGN_OR_RETURN(slice, kernel_args(run_->program.manifest, run_->params,
                                               run_->span(first, count), limits()));
    slice_steps = steps_of(*run_, slice.launches);
    dataset = &slice.dataset;
    steps = &slice_steps;
  }
  set_dataset_iteration(dataset, iteration);
  set_identity(aggregate);
  run_->state_bytes.assign(state.bytes.begin(), state.bytes.end());
  const std::vector<uint8_t> state_packed =
      pack_section(run_->state_layout, state, reinterpret_cast<uint64_t>(run_->state_bytes.data()));
  const std::vector<uint8_t> aggregate_packed = pack_section(
      run_->aggregate_layout, *aggregate, reinterpret_cast<uint64_t>(aggregate->bytes.data()));
  const void* args[4] = {run_->params_packed.data(), dataset->data(), state_packed.data(),
                         aggregate_packed.data()};
  double kernel_ms = 0;
  for (const Step& step : *steps) {
    const Clock::time_point t = Clock::now();
    LIZARD_RETURN_IF_ERROR(launch(step, args));
    kernel_ms += ms_since(t);
  }
  if (stats) {
    stats->kernel_ms = kernel_ms;
    stats->total_ms = ms_since(start);
  }
  return Status::Ok();
}

// Runs the named generator kernels once over the partition, in that order,
// with a zero state and aggregate.
Status CpuExecutor::run_generators(const std::vector<std::string>& names) {
  if (names.empty()) return Status::Ok();
  const Manifest& m = run_->program.manifest;
  LIZARD_ASSIGN_OR_RETURN(std::vector<GeneratorLaunch> launches,
                          generator_launches(m, run_->params, names, run_->rows, limits()));
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer state, make_section(m.state, m, run_->params));
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer agg, make_section(m.aggregate, m, run_->params));
  const auto state_packed =
      pack_section(run_->state_layout, state, reinterpret_cast<uint64_t>(state.bytes.data()));
  const auto agg_packed =
      pack_section(run_->aggregate_layout, agg, reinterpret_cast<uint64_t>(agg.bytes.data()));
  const void* args[4] = {run_->params_packed.data(), run_->dataset_packed.data(),
                         state_packed.data(), agg_packed.data()};
  for (const GeneratorLaunch& g : launches) {
    const std::string& name = g.step->kernel;
    LIZARD_RETURN_IF_ERROR(launch(Step{name, run_->module->kernels.at(name), g.config}, args));
  }
  return Status::Ok();
}

// Hands out chunks of the grid's blocks to as many of the pool's workers as
// the kernel's last launch says are worth waking; the first error stops the
// launch.  The calling thread (worker 0) times the blocks it ran, a figure
// that, unlike the launch's, holds no other thread's wake-up.
Status CpuExecutor::launch(const Step& step, const void* const* args) {
  const LaunchConfig& c = step.config;
  const uint64_t total = c.total_blocks();
  if (total == 0) return Status::Ok();
  const uint64_t chunk = std::max<uint64_t>(1, total / (static_cast<uint64_t>(pool_.size()) * 16));
  double& block_us = run_->block_us[step.fn];
  const int workers = pool_.workers_for((total + chunk - 1) / chunk, block_us * total);
  std::atomic<uint64_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::string error;
  uint64_t own_blocks = 0;  // worker 0's
  double own_us = 0;
  pool_.run(
      [&](int worker) {
        const Clock::time_point start = Clock::now();
        uint64_t blocks = 0;
        lizard_cpu_launch l{};
        std::copy(c.grid, c.grid + 3, l.grid);
        std::copy(c.block, c.block + 3, l.block);
        l.shared_bytes = c.shared_bytes;
        l.flags = workers == 1 ? LIZARD_CPU_LAUNCH_SOLO : 0;
        char err[512];
        while (!failed.load(std::memory_order_relaxed)) {
          l.first_block = next.fetch_add(chunk);
          if (l.first_block >= total) break;
          l.end_block = std::min(total, l.first_block + chunk);
          blocks += l.end_block - l.first_block;
          err[0] = '\0';
          if (step.fn(&l, args, err, sizeof err) != 0) {
            std::lock_guard<std::mutex> lock(mu);
            if (!failed.exchange(true)) error = err[0] ? err : "kernel failed";
          }
        }
        if (worker != 0) return;
        own_blocks = blocks;
        own_us = ms_since(start) * 1000;
      },
      workers);
  if (own_blocks > 0) block_us = own_us / static_cast<double>(own_blocks);
  if (failed) return runtime_error("kernel '" + step.kernel + "': " + error);
  return Status::Ok();
}

Result<std::vector<std::vector<uint8_t>>> CpuExecutor::end_run(bool want_outputs) {
  if (!run_) return no_run_error("end_run");
  std::unique_ptr<Run> run = std::move(run_);
  std::vector<std::vector<uint8_t>> out(run->fields.size());
  if (want_outputs) {
    const Manifest& m = run->program.manifest;
    for (size_t i = 0; i < out.size(); ++i) {
      if (!m.dataset[i].output) continue;
      const RowsView& kept = run->kept_views[i];
      if (kept.data())
        out[i].assign(kept.data(), kept.data() + kept.size());
      else
        out[i] = std::move(run->fields[i]);
    }
  }
  ended_run_ = std::move(run);  // its rows and mappings: freed once the outputs are sent
  return out;
}

void CpuExecutor::free_ended_run() {
  ended_run_.reset();
}

std::unique_ptr<Executor> make_cpu_executor(const CpuExecutorOptions& o) {
  return std::make_unique<CpuExecutor>(o);
}

}  // namespace lizard
