#include "plan/executor_load.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace lizard {

namespace {
constexpr double kUtilizationStep = 10;  // percent
constexpr double kFastLaunchUs = 50;
}  // namespace

double idle_capacity(const ExecutorLoad& e) {
  double busy = 0;
  if (e.utilization > 0)
    busy = std::min(100.0, std::floor(e.utilization / kUtilizationStep) * kUtilizationStep);
  return std::max(e.weight, 0.0) * (100 - busy) / 100;
}

int launch_delay_class(const ExecutorLoad& e) {
  int c = 0;
  for (double limit = kFastLaunchUs; e.launch_delay_us > limit && c < 60; limit *= 2) ++c;
  return c;
}

bool less_loaded(const ExecutorLoad& a, const ExecutorLoad& b) {
  const double ca = idle_capacity(a), cb = idle_capacity(b);
  if (ca != cb) return ca > cb;
  const int da = launch_delay_class(a), db = launch_delay_class(b);
  if (da != db) return da < db;
  return a.free_memory > b.free_memory;
}

std::vector<size_t> rank_by_load(const std::vector<ExecutorLoad>& loads) {
  std::vector<size_t> order(loads.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return less_loaded(loads[a], loads[b]); });
  return order;
}

}  // namespace lizard
