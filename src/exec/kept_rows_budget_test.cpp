#include "exec/kept_rows_budget.h"

#include <gtest/gtest.h>

#include "exec/kept_rows.h"

namespace lizard {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

ExecutorInfo device(const char* kind, uint64_t total, uint64_t free) {
  ExecutorInfo i;
  i.kind = kind;
  i.total_memory = total;
  i.free_memory = free;
  return i;
}

TEST(KeptRowsBudget, AGivenSizeIsKeptAsIs) {
  EXPECT_EQ(kept_rows_budget(0, device("cuda", 80 * kGiB, 70 * kGiB)), 0u);
  EXPECT_EQ(kept_rows_budget(512, device("cpu", 16 * kGiB, 8 * kGiB)), uint64_t{512} << 20);
}

TEST(KeptRowsBudget, ByDefaultHalfOfAGpusFreeMemoryAndABoundedShareOfTheHosts) {
  EXPECT_EQ(kept_rows_budget(kKeptRowsAuto, device("cuda", 80 * kGiB, 70 * kGiB)), 35 * kGiB);
  EXPECT_EQ(kept_rows_budget(kKeptRowsAuto, device("cpu", 4 * kGiB, 3 * kGiB)), 1 * kGiB);
  EXPECT_EQ(kept_rows_budget(kKeptRowsAuto, device("cpu", 512 * kGiB, 500 * kGiB)), 2 * kGiB);
}

TEST(KeptRowsBudget, ASmallerBudgetEvictsTheLeastRecentlyUsedFirst) {
  KeptRows<std::vector<uint8_t>> kept(300);
  for (const char* key : {"a", "b", "c"}) kept.put(key, std::vector<uint8_t>(100), 100);
  kept.find("a");  // now the most recently used
  kept.set_budget(200);
  EXPECT_EQ(kept.keys(), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(kept.bytes(), 200u);
  kept.set_budget(50);
  EXPECT_TRUE(kept.empty());
}

TEST(KeptRowsBudget, RowsARunUsesAreNeverEvictedForAnother) {
  KeptRows<std::vector<uint8_t>> kept(300);
  kept.put("used", std::vector<uint8_t>(100), 100);
  kept.put("old", std::vector<uint8_t>(100), 100);
  kept.put("new", std::vector<uint8_t>(100), 100);
  // Room for a run's buffers: the others go, least recently used first.
  EXPECT_TRUE(kept.evict_one({"used"}));
  EXPECT_EQ(kept.keys(), (std::vector<std::string>{"new", "used"}));
  EXPECT_TRUE(kept.evict_one({"used"}));
  EXPECT_FALSE(kept.evict_one({"used"}));
  EXPECT_EQ(kept.keys(), std::vector<std::string>{"used"});
  // Rows that do not fit beside those a run uses are not kept.
  EXPECT_FALSE(kept.put("big", std::vector<uint8_t>(250), 250, {"used"}));
  EXPECT_EQ(kept.keys(), std::vector<std::string>{"used"});
}

}  // namespace
}  // namespace lizard
