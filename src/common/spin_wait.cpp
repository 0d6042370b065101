#include "common/spin_wait.h"

#include <cstdlib>

namespace lizard {

int64_t spin_budget_us() {
  static const int64_t budget = [] {
    if (const char* v = std::getenv("LIZARD_SPIN_US"); v && *v) {
      char* end = nullptr;
      const long long us = std::strtoll(v, &end, 10);
      if (end != v && *end == '\0' && us >= 0) return static_cast<int64_t>(us);
    }
    return int64_t{1000};
  }();
  return budget;
}

}  // namespace lizard
