#include "exec/kept_rows_budget.h"

#include <algorithm>

namespace lizard {

uint64_t kept_rows_budget(int64_t option_mb, const ExecutorInfo& device) {
  if (option_mb >= 0) return static_cast<uint64_t>(option_mb) << 20;
  if (device.kind == "cuda") return device.free_memory / 2;
  constexpr uint64_t kHostCap = uint64_t{2} << 30;
  return std::min(kHostCap, device.total_memory / 4);
}

}  // namespace lizard
