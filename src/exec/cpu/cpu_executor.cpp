#include "exec/cpu/cpu_executor.h"

#include <unistd.h>
#include <cstring>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "exec/cpu/kernel_source.h"
#include "exec/host_compiler.h"
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

std::string default_cache_dir() {
  return (std::filesystem::temp_directory_path() /
          ("lizard-cpu-kernels-" + std::to_string(::getuid())))
      .string();
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
  StructLayout state_layout, aggregate_layout;
  std::vector<uint8_t> params_packed, dataset_packed;
  std::vector<uint8_t> state_bytes;  // the kernels' copy of the state
  std::vector<Step> steps;
  int64_t rows = 0, first_row = 0;
  uint64_t seed = 0;
  std::vector<uint64_t> field_ptrs;  // row 0 of each field
};

CpuExecutor::CpuExecutor(const CpuExecutorOptions& o)
    : cache_dir_(o.cache_dir.empty() ? default_cache_dir() : o.cache_dir),
      pool_(resolve_threads(o.threads)) {
  info_.kind = "cpu";
  info_.name = cpu_model();
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
  if (modules_.count(program.hash)) return Status::Ok();
  LIZARD_ASSIGN_OR_RETURN(CpuBuildPlan plan, plan_cpu_build(program));
  HostCompiler compiler(cache_dir_);
  Result<std::string> library = compiler.build_shared(plan.files, plan.units, plan.flags);
  if (!library.ok()) {
    if (library.status().code() != Code::kCompileError) return library.status();
    return compile_error(program.manifest.cuda_source + ": build failed for the CPU backend:\n" +
                         library.status().message());
  }
  LIZARD_ASSIGN_OR_RETURN(modules_[program.hash], load(program, *library));
  return Status::Ok();
}

Result<std::shared_ptr<CpuExecutor::Module>> CpuExecutor::load(const ProgramImage& program,
                                                               const std::string& library) {
  auto module = std::make_shared<Module>();
  LIZARD_ASSIGN_OR_RETURN(module->library, SharedLibrary::open(library));
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
  LIZARD_RETURN_IF_ERROR(build(program));
  const Manifest& m = program.manifest;
  if (data.fields.size() != m.dataset.size())
    return invalid_argument("partition has " + std::to_string(data.fields.size()) +
                            " fields, the program " + std::to_string(m.dataset.size()));
  auto run = std::make_unique<Run>();
  run->program = program;
  run->params = params;
  run->module = modules_[program.hash];
  const Manifest& rm = run->program.manifest;
  std::vector<uint64_t> ptrs;
  for (size_t i = 0; i < rm.dataset.size(); ++i) {
    const FieldSpec& f = rm.dataset[i];
    LIZARD_ASSIGN_OR_RETURN(int64_t width, row_width(f, rm, params));
    const size_t bytes = static_cast<size_t>(data.rows * width) * dtype_size(f.type);
    std::vector<uint8_t>& field = data.fields[i];
    if (!f.input || (field.empty() && !data.generators.empty())) field.assign(bytes, 0);
    if (field.size() != bytes)
      return invalid_argument("dataset field '" + f.name + "' has " + std::to_string(field.size()) +
                              " bytes, expected " + std::to_string(bytes));
    run->fields.push_back(std::move(field));
    ptrs.push_back(reinterpret_cast<uint64_t>(run->fields.back().data()));
  }
  run->params_packed = pack_params(params_layout(rm), params);
  run->dataset_packed =
      pack_dataset(dataset_layout(rm), data.rows, data.first_row, ptrs, data.seed);
  run->rows = data.rows;
  run->first_row = data.first_row;
  run->seed = data.seed;
  run->field_ptrs = ptrs;
  run->state_layout = state_layout(rm);
  run->aggregate_layout = aggregate_layout(rm);
  for (const KernelStep& step : rm.iterate) {
    LIZARD_ASSIGN_OR_RETURN(LaunchConfig c,
                            plan_launch(step, rm, params, data.rows, info_.sm_count, 256));
    run->steps.push_back({step.kernel, run->module->kernels.at(step.kernel), c});
  }
  run_ = std::move(run);
  return run_generators(data.generators);
}

Status CpuExecutor::iterate(const SectionBuffer& state, SectionBuffer* aggregate,
                            IterationStats* stats) {
  if (!run_) return internal_error("iterate() called outside a run");
  return iterate_rows(state, aggregate, stats, 0, run_->rows);
}

Status CpuExecutor::iterate_rows(const SectionBuffer& state, SectionBuffer* aggregate,
                                 IterationStats* stats, int64_t first, int64_t count) {
  if (!run_) return internal_error("iterate() called outside a run");
  if (first < 0 || count < 0 || first > run_->rows - count)
    return invalid_argument("rows [" + std::to_string(first) + ", " +
                            std::to_string(first + count) + ") are not within the partition's " +
                            std::to_string(run_->rows));
  const Clock::time_point start = Clock::now();
  const Manifest& m = run_->program.manifest;
  const std::vector<uint8_t>* dataset = &run_->dataset_packed;
  const std::vector<Step>* steps = &run_->steps;
  std::vector<uint8_t> slice_dataset;
  std::vector<Step> slice_steps;
  if (first != 0 || count != run_->rows) {
    LIZARD_ASSIGN_OR_RETURN(auto ptrs, field_ptrs_at_row(m, run_->params, run_->field_ptrs, first));
    slice_dataset =
        pack_dataset(dataset_layout(m), count, run_->first_row + first, ptrs, run_->seed);
    for (size_t k = 0; k < m.iterate.size(); ++k) {
      Step s = run_->steps[k];
      LIZARD_ASSIGN_OR_RETURN(
          s.config, plan_launch(m.iterate[k], m, run_->params, count, info_.sm_count, 256));
      slice_steps.push_back(s);
    }
    dataset = &slice_dataset;
    steps = &slice_steps;
  }
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

// Runs the named generator kernels once over the partition, with a zero
// state and aggregate.
Status CpuExecutor::run_generators(const std::vector<std::string>& names) {
  const Manifest& m = run_->program.manifest;
  for (const std::string& name : names) {
    const KernelStep* step = m.find_generator(name);
    if (!step) return invalid_argument("'" + name + "' is not a generator kernel of the program");
    LIZARD_ASSIGN_OR_RETURN(SectionBuffer state, make_section(m.state, m, run_->params));
    LIZARD_ASSIGN_OR_RETURN(SectionBuffer agg, make_section(m.aggregate, m, run_->params));
    auto state_packed =
        pack_section(run_->state_layout, state, reinterpret_cast<uint64_t>(state.bytes.data()));
    auto agg_packed =
        pack_section(run_->aggregate_layout, agg, reinterpret_cast<uint64_t>(agg.bytes.data()));
    const void* args[4] = {run_->params_packed.data(), run_->dataset_packed.data(),
                           state_packed.data(), agg_packed.data()};
    int64_t rows = 0;
    std::memcpy(&rows, run_->dataset_packed.data(), sizeof rows);
    LIZARD_ASSIGN_OR_RETURN(LaunchConfig c,
                            plan_launch(*step, m, run_->params, rows, info_.sm_count, 256));
    LIZARD_RETURN_IF_ERROR(launch(Step{name, run_->module->kernels.at(name), c}, args));
  }
  return Status::Ok();
}

// Hands out chunks of the grid's blocks to the pool's workers; the first
// error stops the launch.
Status CpuExecutor::launch(const Step& step, const void* const* args) {
  const LaunchConfig& c = step.config;
  const uint64_t total = c.total_blocks();
  if (total == 0) return Status::Ok();
  const uint64_t workers = static_cast<uint64_t>(pool_.size());
  const uint64_t chunk = std::max<uint64_t>(1, total / (workers * 16));
  std::atomic<uint64_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::string error;
  pool_.run([&](int) {
    lizard_cpu_launch_abi l{};
    std::copy(c.grid, c.grid + 3, l.grid);
    std::copy(c.block, c.block + 3, l.block);
    l.shared_bytes = c.shared_bytes;
    char err[512];
    while (!failed.load(std::memory_order_relaxed)) {
      l.first_block = next.fetch_add(chunk);
      if (l.first_block >= total) return;
      l.end_block = std::min(total, l.first_block + chunk);
      err[0] = '\0';
      if (step.fn(&l, args, err, sizeof err) != 0) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failed.exchange(true)) error = err[0] ? err : "kernel failed";
      }
    }
  });
  if (failed) return runtime_error("kernel '" + step.kernel + "': " + error);
  return Status::Ok();
}

Result<std::vector<std::vector<uint8_t>>> CpuExecutor::end_run(bool want_outputs) {
  if (!run_) return internal_error("end_run() called outside a run");
  std::unique_ptr<Run> run = std::move(run_);
  std::vector<std::vector<uint8_t>> out(run->fields.size());
  if (want_outputs) {
    const Manifest& m = run->program.manifest;
    for (size_t i = 0; i < out.size(); ++i)
      if (m.dataset[i].output) out[i] = std::move(run->fields[i]);
  }
  return out;
}

std::unique_ptr<Executor> make_cpu_executor(const CpuExecutorOptions& o) {
  return std::make_unique<CpuExecutor>(o);
}

}  // namespace lizard
