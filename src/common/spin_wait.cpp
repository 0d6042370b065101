#include "common/spin_wait.h"

#include <cstdlib>
#include <thread>

namespace lizard {

namespace {

// The microseconds in environment variable `name`, or `otherwise` when it
// is unset or not a count.
int64_t microseconds_from(const char* name, int64_t otherwise) {
  if (const char* v = std::getenv(name); v && *v) {
    char* end = nullptr;
    const long long us = std::strtoll(v, &end, 10);
    if (end != v && *end == '\0' && us >= 0) return static_cast<int64_t>(us);
  }
  return otherwise;
}

}  // namespace

int64_t spin_budget_us() {
  static const int64_t budget = microseconds_from("LIZARD_SPIN_US", 1000);
  return budget;
}

int64_t spin_pause_us() {
  // Below 8 hardware threads, a poller that does not yield may hold the
  // core that the thread it waits for needs.
  static const int64_t pause =
      microseconds_from("LIZARD_SPIN_PAUSE_US", std::thread::hardware_concurrency() >= 8 ? 50 : 0);
  return pause;
}

}  // namespace lizard
