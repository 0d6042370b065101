#include "client/ahead_builds.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>

#include "common/clock.h"

namespace lizard {

namespace {

// Variants remembered as built or failed; beyond this the record starts
// over (a variant built since is then found in the cache instead).
constexpr size_t kMaxRemembered = 4096;

}  // namespace

AheadBuilds::AheadBuilds(std::unique_ptr<VariantCompiler> compiler, int threads, size_t max_queued)
    : compiler_(std::move(compiler)), max_queued_(max_queued) {
  for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { work(); });
}

AheadBuilds::~AheadBuilds() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    queue_.clear();
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void AheadBuilds::request(std::shared_ptr<const ProgramImage> program, const ParamValues& params) {
  ProgramVariant variant = variant_for_run(*program, params);
  std::lock_guard<std::mutex> l(mu_);
  if (stopping_ || variants_.count(variant.key)) return;
  if (queue_.size() >= max_queued_) return;
  if (variants_.size() >= kMaxRemembered) {
    for (auto it = variants_.begin(); it != variants_.end();)
      it = it->second == State::kBuilt || it->second == State::kFailed ? variants_.erase(it)
                                                                       : std::next(it);
  }
  variants_[variant.key] = State::kQueued;
  queue_.push_back(std::move(variant));
  wake_.notify_one();
}

bool AheadBuilds::needs_compile(const ProgramVariant& variant) const {
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = variants_.find(variant.key);
    if (it != variants_.end() && it->second == State::kBuilt) return false;
  }
  return !compiler_->cached(variant);
}

int AheadBuilds::compiled() const {
  std::lock_guard<std::mutex> l(mu_);
  return compiled_;
}

void AheadBuilds::work() {
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    wake_.wait(l, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    ProgramVariant variant = std::move(queue_.front());
    queue_.pop_front();
    variants_[variant.key] = State::kBuilding;
    l.unlock();
    const auto t0 = SteadyClock::now();
    bool compiled = false;
    Status st = compiler_->compile(variant, &compiled);
    const std::string name =
        variant.image.manifest.name + (variant.values.empty() ? "" : " " + variant.values.key());
    if (!st.ok())  // the run that needs it compiles it again and reports the error
      spdlog::info("ahead build of {} failed: {}", name, st.message());
    else if (compiled)
      spdlog::info("built {} ahead of its runs in {:.0f} ms", name, ms_since(t0));
    l.lock();
    variants_[variant.key] = st.ok() ? State::kBuilt : State::kFailed;
    if (compiled) ++compiled_;
  }
}

}  // namespace lizard
