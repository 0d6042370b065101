#include "plan/executor_load.h"

#include <gtest/gtest.h>

namespace lizard {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

ExecutorLoad gpu(double utilization, double delay_us = -1, uint64_t free = 40 * kGiB,
                 double weight = 100) {
  return ExecutorLoad{weight, free, utilization, delay_us};
}

TEST(ExecutorLoad, AnIdleGpuComesBeforeABusyOne) {
  EXPECT_EQ(rank_by_load({gpu(90), gpu(0), gpu(45)}), (std::vector<size_t>{1, 2, 0}));
}

TEST(ExecutorLoad, UtilisationDiffersOnlyInStepsOfTenPercent) {
  EXPECT_EQ(idle_capacity(gpu(3)), idle_capacity(gpu(9.9)));
  EXPECT_GT(idle_capacity(gpu(9.9)), idle_capacity(gpu(10)));
  EXPECT_DOUBLE_EQ(idle_capacity(gpu(55)), 50);
  EXPECT_DOUBLE_EQ(idle_capacity(gpu(100)), 0);
  // Within a step, the free memory decides.
  EXPECT_EQ(rank_by_load({gpu(2, -1, 10 * kGiB), gpu(8, -1, 70 * kGiB)}),
            (std::vector<size_t>{1, 0}));
}

TEST(ExecutorLoad, UnknownTelemetryCountsAsIdle) {
  ExecutorLoad cpu{100, 20 * kGiB, -1, -1};
  EXPECT_DOUBLE_EQ(idle_capacity(cpu), 100);
  EXPECT_EQ(launch_delay_class(cpu), 0);
  EXPECT_EQ(rank_by_load({gpu(30), cpu}), (std::vector<size_t>{1, 0}));
}

TEST(ExecutorLoad, AStrongerGpuMayBeWorthMoreThanAnIdleWeakOne) {
  // Half of a 260-weight GPU is more than all of a 100-weight one.
  EXPECT_EQ(rank_by_load({gpu(0, -1, 40 * kGiB, 100), gpu(50, -1, 40 * kGiB, 260)}),
            (std::vector<size_t>{1, 0}));
}

TEST(ExecutorLoad, ASlowLaunchBreaksATieInLoad) {
  EXPECT_EQ(launch_delay_class(gpu(0, 8)), 0);
  EXPECT_EQ(launch_delay_class(gpu(0, 50)), 0);
  EXPECT_EQ(launch_delay_class(gpu(0, 51)), 1);
  EXPECT_EQ(launch_delay_class(gpu(0, 400)), 3);
  // Same load class: the GPU whose launches wait (another process's kernels
  // time-sliced with ours) goes last, even with more free memory.
  EXPECT_EQ(rank_by_load({gpu(0, 900, 70 * kGiB), gpu(0, 9, 30 * kGiB), gpu(0, 30, 50 * kGiB)}),
            (std::vector<size_t>{2, 1, 0}));
}

TEST(ExecutorLoad, EqualExecutorsKeepTheirOrder) {
  EXPECT_EQ(rank_by_load({gpu(0), gpu(0), gpu(0)}), (std::vector<size_t>{0, 1, 2}));
  EXPECT_TRUE(rank_by_load({}).empty());
}

}  // namespace
}  // namespace lizard
