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

namespace {

// Splits `rows` over the slots marked open, by weight, largest remainder first.
std::vector<int64_t> proportional(int64_t rows, const std::vector<ExecutorSlot>& slots,
                                  const std::vector<bool>& open) {
  const size_t n = slots.size();
  double total = 0;
  size_t open_count = 0;
  for (size_t i = 0; i < n; ++i)
    if (open[i]) total += std::max(slots[i].weight, 0.0), ++open_count;
  std::vector<int64_t> counts(n, 0);
  std::vector<std::pair<double, size_t>> remainders;
  int64_t assigned = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!open[i]) continue;
    double share = total > 0 ? rows * (std::max(slots[i].weight, 0.0) / total)
                             : static_cast<double>(rows) / open_count;
    counts[i] = static_cast<int64_t>(std::floor(share));
    assigned += counts[i];
    remainders.push_back({share - counts[i], i});
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t k = 0; assigned < rows && !remainders.empty();
       k = (k + 1) % remainders.size(), ++assigned)
    ++counts[remainders[k].second];
  return counts;
}

}  // namespace

bool fits(int64_t rows, const std::vector<ExecutorSlot>& slots) {
  int64_t room = 0;
  for (const auto& s : slots) {
    if (s.max_rows < 0) return !slots.empty();
    room += s.max_rows;
  }
  return rows <= room;
}

PartitionPlan plan_partition(int64_t rows, const std::vector<ExecutorSlot>& slots) {
  PartitionPlan plan;
  plan.total_rows = rows;
  if (slots.empty()) return plan;
  const size_t n = slots.size();
  // Water-filling: slots whose share exceeds their room are capped, and the
  // rest is shared again among the others.
  std::vector<bool> open(n, true);
  std::vector<int64_t> counts(n, 0);
  int64_t left = rows;
  for (;;) {
    std::vector<int64_t> share = proportional(left, slots, open);
    bool capped = false;
    for (size_t i = 0; i < n; ++i) {
      if (open[i] && slots[i].max_rows >= 0 && share[i] > slots[i].max_rows) {
        counts[i] = slots[i].max_rows;
        left -= counts[i];
        open[i] = false;
        capped = true;
      }
    }
    if (capped && std::find(open.begin(), open.end(), true) != open.end()) continue;
    for (size_t i = 0; i < n; ++i)
      if (open[i]) counts[i] = share[i];
    break;
  }
  int64_t first = 0;
  for (size_t i = 0; i < n; ++i) {
    plan.entries.push_back(
        {slots[i].worker_id, slots[i].executor, slots[i].weight, first, counts[i]});
    first += counts[i];
  }
  return plan;
}

}  // namespace lizard
