#include "plan/partition_plan.h"

#include <gtest/gtest.h>

namespace lizard {
namespace {

TEST(PartitionPlan, SplitsInProportionToWeightAndCoversEveryRow) {
  PartitionPlan p = plan_partition(1000, {{"a", 0, 1}, {"b", 0, 2}, {"c", 0, 1}});
  ASSERT_EQ(p.entries.size(), 3u);
  EXPECT_EQ(p.entries[0].rows, 250);
  EXPECT_EQ(p.entries[1].rows, 500);
  EXPECT_EQ(p.entries[2].rows, 250);
  EXPECT_EQ(p.entries[1].first_row, 250);
  EXPECT_EQ(p.entries[2].first_row, 750);
}

TEST(PartitionPlan, RoundsSoCountsSumToRows) {
  PartitionPlan p = plan_partition(10, {{"a", 0, 1}, {"b", 0, 1}, {"c", 0, 1}});
  int64_t sum = 0, next = 0;
  for (const auto& e : p.entries) {
    EXPECT_EQ(e.first_row, next);
    next += e.rows;
    sum += e.rows;
    EXPECT_GE(e.rows, 3);
  }
  EXPECT_EQ(sum, 10);
}

TEST(PartitionPlan, FewerRowsThanExecutors) {
  PartitionPlan p = plan_partition(1, {{"a", 0, 1}, {"b", 0, 1}});
  EXPECT_EQ(p.entries[0].rows + p.entries[1].rows, 1);
}

TEST(PartitionPlan, NeverBeyondAnExecutorsMemory) {
  std::vector<ExecutorSlot> slots = {{"a", 0, 10, 100}, {"b", 0, 1, -1}, {"c", 0, 1, 1000}};
  ASSERT_TRUE(fits(1200, slots));
  PartitionPlan p = plan_partition(1200, slots);
  EXPECT_EQ(p.entries[0].rows, 100);  // capped; the rest shared by weight
  EXPECT_EQ(p.entries[1].rows, 550);
  EXPECT_EQ(p.entries[2].rows, 550);
  EXPECT_FALSE(fits(2000, {{"a", 0, 1, 100}, {"b", 0, 1, 1000}}));
  EXPECT_TRUE(fits(1100, {{"a", 0, 1, 100}, {"b", 0, 1, 1000}}));
}

}  // namespace
}  // namespace lizard
