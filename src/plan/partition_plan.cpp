#include "plan/partition_plan.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace lizard {

nlohmann::json PartitionPlan::to_json() const {
  nlohmann::json out = {{"total_rows", total_rows}, {"executors", nlohmann::json::array()}};
  for (const auto& e : entries)
    out["executors"].push_back({{"worker", e.worker_id},
                                {"executor", e.executor},
                                {"weight", e.weight},
                                {"first_row", e.first_row},
                                {"rows", e.rows}});
  return out;
}

PartitionPlan plan_partition(int64_t rows, const std::vector<ExecutorSlot>& slots) {
  PartitionPlan plan;
  plan.total_rows = rows;
  if (slots.empty()) return plan;
  double total = 0;
  for (const auto& s : slots) total += std::max(s.weight, 0.0);
  const size_t n = slots.size();
  std::vector<int64_t> counts(n, 0);
  std::vector<std::pair<double, size_t>> remainders;
  int64_t assigned = 0;
  for (size_t i = 0; i < n; ++i) {
    double share = total > 0 ? rows * (std::max(slots[i].weight, 0.0) / total)
                             : static_cast<double>(rows) / n;
    counts[i] = static_cast<int64_t>(std::floor(share));
    assigned += counts[i];
    remainders.push_back({share - counts[i], i});
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t k = 0; assigned < rows; k = (k + 1) % n, ++assigned) ++counts[remainders[k].second];
  int64_t first = 0;
  for (size_t i = 0; i < n; ++i) {
    plan.entries.push_back({slots[i].worker_id, slots[i].executor, slots[i].weight, first, counts[i]});
    first += counts[i];
  }
  return plan;
}

}  // namespace lizard
