// ExecutorLoad: how busy an executor (a GPU) is now, as its worker last
// measured it, and the order of preference between executors that follows:
// the scheduler places runs on the least loaded executors first, and a
// worker can pick the best GPUs of its node with the same rule.
//
//   std::vector<ExecutorLoad> loads = {{132, 80ull << 30, 0, 9.5}, {132, 80ull << 30, 95, 40}};
//   std::vector<size_t> best_first = rank_by_load(loads);   // {0, 1}
//
// The rule, applied in turn until one executor is ahead:
//   1. more idle capacity: weight × (1 − utilisation), the utilisation
//      rounded down to a multiple of 10 % (smaller differences are noise);
//      an unknown utilisation counts as idle;
//   2. a shorter launch delay, compared in classes that double from 50 µs
//      (≤ 50, ≤ 100, ≤ 200, … µs); an unknown delay counts as the shortest;
//   3. more free memory.
// Executors equal on all three keep their given order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lizard {

struct ExecutorLoad {
  double weight = 1;            // capability, as in the partition plan
  uint64_t free_memory = 0;     // bytes
  double utilization = -1;      // percent of recent time a kernel ran; < 0: unknown
  double launch_delay_us = -1;  // an empty kernel, launch to completion; < 0: unknown
};

// Rule 1's figure: weight × the idle share (utilisation in steps of 10 %).
double idle_capacity(const ExecutorLoad& e);
// Rule 2's class: 0 up to 50 µs (or unknown), then one more per doubling.
int launch_delay_class(const ExecutorLoad& e);
// True when `a` is the better choice than `b` (a strict weak order).
bool less_loaded(const ExecutorLoad& a, const ExecutorLoad& b);
// Indices of `loads`, best choice first.
std::vector<size_t> rank_by_load(const std::vector<ExecutorLoad>& loads);

}  // namespace lizard
