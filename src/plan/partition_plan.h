// PartitionPlan: how a run's rows are split across executors (GPUs or CPU
// workers), in proportion to each executor's capability weight.
//
//   std::vector<ExecutorSlot> slots = {{"w1", 0, 132.0}, {"w2", 0, 16.0}};
//   PartitionPlan plan = plan_partition(rows, slots);
//   for (const PlanEntry& e : plan.entries) ...   // contiguous, in slot order
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace lizard {

struct ExecutorSlot {
  std::string worker_id;
  int executor = 0;  // index within the worker
  double weight = 1;
  int64_t max_rows = -1;  // what fits in its memory; < 0: no limit
};

struct PlanEntry {
  std::string worker_id;
  int executor = 0;
  double weight = 1;
  int64_t first_row = 0;
  int64_t rows = 0;
};

struct PartitionPlan {
  int64_t total_rows = 0;
  std::vector<PlanEntry> entries;
  nlohmann::json to_json() const;
};

// Splits [0, rows) into contiguous ranges, one per slot in the given order,
// proportional to weight (largest-remainder rounding, so counts sum to rows),
// never beyond a slot's max_rows: what does not fit goes to the others in
// proportion.  Slots of one worker should be adjacent so each worker's rows
// are contiguous.  Callers check fits() first.
PartitionPlan plan_partition(int64_t rows, const std::vector<ExecutorSlot>& slots);
// Whether `rows` fit in the slots' max_rows together.
bool fits(int64_t rows, const std::vector<ExecutorSlot>& slots);

}  // namespace lizard
