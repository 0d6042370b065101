#include "client/ahead_builds.h"

#include <spdlog/spdlog.h>

#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>

#include "common/clock.h"

namespace lizard {

namespace {

// Lowers the calling thread's CPU priority (Linux gives each thread its
// own nice value) and names it, so that builds ahead of queued runs take
// the cores only when a run's own compile does not need them.
void yield_to_run_compiles() {
  pthread_setname_np(pthread_self(), "lizard-ahead");
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(tid), 10) != 0)
    spdlog::debug("ahead builds keep the worker's CPU priority: {}", std::strerror(errno));
}

// Variants remembered as built or failed; beyond this the record starts
// over (a variant built since is then found in the cache instead).
constexpr size_t kMaxRemembered = 4096;

}  // namespace

int AheadBuilds::default_threads() {
  return std::max(2, static_cast<int>(std::thread::hardware_concurrency()) / 2);
}

AheadBuilds::AheadBuilds(std::unique_ptr<VariantCompiler> compiler, int threads, size_t max_queued)
    : compiler_(std::move(compiler)), max_queued_(max_queued) {
  threads = std::max(1, threads);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { work(&queue_); });
  if (!compiler_->tiered()) return;
  // Quick builds are short and what queued runs begin on: a GPU node's
  // cores (a quarter of them, up to 8) make them side by side.
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  const int quick = std::max(threads, std::min(8, cores / 4));
  for (int i = 0; i < quick; ++i) threads_.emplace_back([this] { work(&quick_); });
}

AheadBuilds::~AheadBuilds() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    queue_.clear();
    quick_.clear();
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void AheadBuilds::request(std::shared_ptr<const ProgramImage> program, const ParamValues& params) {
  ProgramVariant variant = variant_for_run(*program, params);
  const bool make_quick = compiler_->tiered() &&
                          !compiler_->cached(variant, BuildTier::kOptimised) &&
                          !compiler_->cached(variant, BuildTier::kFast);
  std::lock_guard<std::mutex> l(mu_);
  if (stopping_ || variants_.count(variant.key)) return;
  if (queue_.size() >= max_queued_) return;
  if (variants_.size() >= kMaxRemembered) {
    for (auto it = variants_.begin(); it != variants_.end();)
      it = it->second == State::kBuilt || it->second == State::kFailed ? variants_.erase(it)
                                                                       : std::next(it);
  }
  variants_[variant.key] = State::kQueued;
  if (make_quick) quick_.push_back(Job{variant, BuildTier::kFast});
  queue_.push_back(Job{std::move(variant), BuildTier::kOptimised});
  wake_.notify_all();
}

bool AheadBuilds::withdraw(const ProgramImage& program, const ParamValues& params) {
  const std::string key = variant_for_run(program, params).key;
  std::lock_guard<std::mutex> l(mu_);
  auto it = variants_.find(key);
  if (it == variants_.end() || it->second != State::kQueued) return false;
  variants_.erase(it);
  for (std::deque<Job>* queue : {&queue_, &quick_}) {
    for (auto job = queue->begin(); job != queue->end();)
      job = job->variant.key == key ? queue->erase(job) : std::next(job);
  }
  return true;
}

bool AheadBuilds::needs_compile(const ProgramVariant& variant) const {
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = variants_.find(variant.key);
    if (it != variants_.end() && it->second == State::kBuilt) return false;
  }
  if (compiler_->cached(variant)) return false;
  return !compiler_->tiered() || !(compiler_->cached(variant, BuildTier::kFast) ||
                                   compiler_->cached(variant, BuildTier::kQuick));
}

int AheadBuilds::compiled() const {
  std::lock_guard<std::mutex> l(mu_);
  return compiled_;
}

void AheadBuilds::work(std::deque<Job>* queue) {
  // On a GPU worker builds are the host's CPU work: the one a starting run
  // waits for goes first.  On a CPU worker the running runs' kernels hold
  // the cores too, and a lower priority would hold builds back behind them.
  if (compiler_->for_gpus()) yield_to_run_compiles();
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    wake_.wait(l, [&] { return stopping_ || !queue->empty(); });
    if (stopping_) return;
    Job job = std::move(queue->front());
    queue->pop_front();
    const bool optimised = job.tier == BuildTier::kOptimised;
    if (optimised) variants_[job.variant.key] = State::kBuilding;
    l.unlock();
    bool compiled = false;
    Status st = build(job, &compiled);
    l.lock();
    if (!optimised) continue;
    variants_[job.variant.key] = st.ok() ? State::kBuilt : State::kFailed;
    if (compiled) ++compiled_;
  }
}

Status AheadBuilds::build(const Job& job, bool* compiled) {
  const auto t0 = SteadyClock::now();
  const ProgramVariant& v = job.variant;
  *compiled = false;
  // The optimised build from the server, when another worker made it.
  if (sharing_.fetch && job.tier == BuildTier::kOptimised && sharing_.fetch(v)) return Status::Ok();
  Status st = compiler_->compile(job.variant, compiled, job.tier);
  if (st.ok() && *compiled && sharing_.offer) sharing_.offer(v);
  const std::string name = (job.tier == BuildTier::kOptimised
                                ? std::string()
                                : std::string("the ") + tier_name(job.tier) + " build of ") +
                           v.image.manifest.name + (v.values.empty() ? "" : " " + v.values.key());
  if (!st.ok())  // the run that needs it compiles it again and reports the error
    spdlog::info("ahead build of {} failed: {}", name, st.message());
  else if (*compiled)
    spdlog::info("built {} ahead of its runs in {:.0f} ms", name, ms_since(t0));
  return st;
}

}  // namespace lizard
