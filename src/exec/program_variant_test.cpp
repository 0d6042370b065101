#include "exec/program_variant.h"

#include <gtest/gtest.h>

namespace lizard {
namespace {

// Which build a run begins on while its optimised build is not ready: a
// quick build already made; else the fast one for a small partition, and
// for a large one the optimised build itself (no quick build is made).
TEST(FirstTier, SmallPartitionsBeginFastLargeOnesOptimisedAndAReadyQuickBuildServesBoth) {
  EXPECT_EQ(first_tier_for(0, false), BuildTier::kFast);  // a registration
  EXPECT_EQ(first_tier_for(8 << 20, false), BuildTier::kFast);
  EXPECT_EQ(first_tier_for(kFastBuildMaxBytes, false), BuildTier::kFast);
  EXPECT_EQ(first_tier_for(kFastBuildMaxBytes + 1, false), BuildTier::kOptimised);
  EXPECT_EQ(first_tier_for(uint64_t{2} << 30, false), BuildTier::kOptimised);
  EXPECT_EQ(first_tier_for(8 << 20, true), BuildTier::kQuick);
  EXPECT_EQ(first_tier_for(uint64_t{2} << 30, true), BuildTier::kQuick);
  EXPECT_STREQ(tier_name(BuildTier::kFast), "fast");
  EXPECT_STREQ(tier_name(BuildTier::kQuick), "quick");
  EXPECT_STREQ(tier_name(BuildTier::kOptimised), "optimised");
}

}  // namespace
}  // namespace lizard
