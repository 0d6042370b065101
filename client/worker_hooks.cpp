#include "client/worker_hooks.h"

#include <spdlog/spdlog.h>

namespace lizard {

WorkerHooks::WorkerHooks(const std::string& cache_dir, HookProcessOptions options,
                         int compile_timeout_s)
    : compiler_(cache_dir, CompileCache::kDefaultMaxBytes, compile_timeout_s),
      options_(std::move(options)) {}

WorkerHooks::~WorkerHooks() = default;

void WorkerHooks::forget(const std::string& hash) {
  std::shared_ptr<HostHooks> gone;  // its idle processes end outside the lock
  std::lock_guard<std::mutex> l(mu_);
  if (auto it = built_.find(hash); it != built_.end()) {
    gone = std::move(it->second);
    built_.erase(it);
  }
  failed_.erase(hash);
}

void WorkerHooks::build(const ProgramImage& program) {
  if (program.manifest.host_source.empty()) return;
  auto built = HostHooks::build(program, compiler_, options_);
  std::lock_guard<std::mutex> l(mu_);
  if (built.ok()) {
    built_[program.hash] = std::move(built).value();
    failed_.erase(program.hash);
    return;
  }
  failed_[program.hash] = built.status().message();
  spdlog::info("program {}: its host hooks did not build here, so the server drives its runs: {}",
               program.hash.substr(0, 12), built.status().message());
}

Result<std::unique_ptr<LoopHooks>> WorkerHooks::open(const ProgramImage& program,
                                                     const ParamValues& params,
                                                     const RunValues& values,
                                                     LoopHookLimits limits) {
  const Manifest& m = program.manifest;
  if (m.host_source.empty()) return std::unique_ptr<LoopHooks>();
  std::shared_ptr<HostHooks> built;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = built_.find(program.hash);
    if (it == built_.end()) {
      auto why = failed_.find(program.hash);
      return unavailable(why == failed_.end() ? "the host hooks were not built on this worker"
                                              : why->second);
    }
    built = it->second;
  }
  if (!built->has_update()) return std::unique_ptr<LoopHooks>();
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer state, make_section(m.state, m, params));
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer agg, make_section(m.aggregate, m, params));
  HookProcessOptions options = options_;
  options.interrupted = std::move(limits.interrupted);
  options.output = std::move(limits.output);
  options.setup_in_background = true;  // answered while the loop's first iteration runs
  if (limits.call_timeout_ms > 0)
    options.call_timeout_ms = static_cast<int>(limits.call_timeout_ms);
  LIZARD_ASSIGN_OR_RETURN(std::unique_ptr<RunHooks> hooks,
                          built->start(m, params, values, state, agg, std::move(options)));
  return std::unique_ptr<LoopHooks>(std::move(hooks));
}

}  // namespace lizard
