#include "client/worker_hooks.h"

#include <spdlog/spdlog.h>

namespace lizard {

// One loop's update hook, in a hook process that goes back to the pool
// when the loop is over, unless a call failed.
class WorkerHooks::Loop : public LoopHooks {
 public:
  Loop(WorkerHooks* owner, std::string hash, Warm warm)
      : owner_(owner), hash_(std::move(hash)), warm_(std::move(warm)) {}
  ~Loop() override {
    *warm_.interrupted = nullptr;
    if (!failed_) owner_->give_back(hash_, std::move(warm_));
  }
  Result<bool> update(SectionBuffer* agg, SectionBuffer* state, int64_t iteration) override {
    auto done = warm_.hooks->update_state(*agg, state, iteration);
    failed_ = failed_ || !done.ok();
    return done;
  }

 private:
  WorkerHooks* owner_;
  std::string hash_;
  Warm warm_;
  bool failed_ = false;
};

WorkerHooks::WorkerHooks(const std::string& cache_dir, HookProcessOptions options)
    : compiler_(cache_dir), options_(std::move(options)) {}

WorkerHooks::~WorkerHooks() = default;

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

Result<WorkerHooks::Warm> WorkerHooks::take(const std::string& hash, const HostHooks& built,
                                            const Manifest& m, const ParamValues& p) {
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer state, make_section(m.state, m, p));
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer agg, make_section(m.aggregate, m, p));
  Warm warm;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto& idle = idle_[hash];
    if (!idle.empty()) {
      warm = std::move(idle.back());
      idle.pop_back();
    }
  }
  // A warm process takes this run's params and layouts; one that cannot is dropped.
  if (warm.hooks && warm.hooks->process() && warm.hooks->process()->setup(m, p, state, agg).ok())
    return warm;
  warm.interrupted = std::make_shared<std::function<Status()>>();
  HookProcessOptions options = options_;
  options.interrupted = [slot = warm.interrupted] { return *slot ? (*slot)() : Status::Ok(); };
  LIZARD_ASSIGN_OR_RETURN(warm.hooks, built.start(m, p, state, agg, std::move(options)));
  return warm;
}

Result<std::unique_ptr<LoopHooks>> WorkerHooks::open(const ProgramImage& program,
                                                     const ParamValues& params,
                                                     std::function<Status()> interrupted) {
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
  LIZARD_ASSIGN_OR_RETURN(Warm warm, take(program.hash, *built, m, params));
  *warm.interrupted = std::move(interrupted);
  return std::unique_ptr<LoopHooks>(std::make_unique<Loop>(this, program.hash, std::move(warm)));
}

void WorkerHooks::give_back(const std::string& hash, Warm warm) {
  std::lock_guard<std::mutex> l(mu_);
  auto& idle = idle_[hash];
  if (idle.size() < 4) idle.push_back(std::move(warm));
}

}  // namespace lizard
