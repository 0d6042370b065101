#include "server/usage_ledger.h"

#include <cmath>

namespace lizard {

// What was held over the interval is counted as held at its start (the
// scheduler samples four times a second), then everything fades by the
// interval's share of the half-life.
void UsageLedger::advance(const std::map<std::string, int64_t>& held, Clock::time_point now) {
  if (started_) {
    const double dt = std::chrono::duration<double>(now - last_).count();
    if (dt > 0) {
      const double fade = half_life_s_ > 0 ? std::exp2(-dt / half_life_s_) : 0.0;
      for (auto& [user, used] : recent_) used *= fade;
      for (const auto& [user, executors] : held_) {
        const double used = static_cast<double>(executors) * dt;
        recent_[user] += used;
        totals_[user] += used;
      }
    }
  }
  started_ = true;
  last_ = now;
  held_ = held;
}

double UsageLedger::recent(const std::string& user) const {
  auto it = recent_.find(user);
  return it == recent_.end() ? 0.0 : it->second;
}

}  // namespace lizard
