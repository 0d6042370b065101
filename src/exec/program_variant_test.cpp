#include "exec/program_variant.h"

#include <gtest/gtest.h>

namespace lizard {
namespace {

// Which first tier a run begins on while its optimised build compiles: the
// quick build once it is ready; else the fast one for a small partition and
// the quick one for a large one.
TEST(FirstTier, SmallPartitionsBeginFastLargeOnesQuickAndAReadyQuickBuildServesBoth) {
  EXPECT_EQ(first_tier_for(0, false), BuildTier::kFast);  // a registration
  EXPECT_EQ(first_tier_for(8 << 20, false), BuildTier::kFast);
  EXPECT_EQ(first_tier_for(kFastBuildMaxBytes, false), BuildTier::kFast);
  EXPECT_EQ(first_tier_for(kFastBuildMaxBytes + 1, false), BuildTier::kQuick);
  EXPECT_EQ(first_tier_for(uint64_t{2} << 30, false), BuildTier::kQuick);
  EXPECT_EQ(first_tier_for(8 << 20, true), BuildTier::kQuick);
  EXPECT_EQ(first_tier_for(uint64_t{2} << 30, true), BuildTier::kQuick);
  EXPECT_STREQ(tier_name(BuildTier::kFast), "fast");
  EXPECT_STREQ(tier_name(BuildTier::kQuick), "quick");
  EXPECT_STREQ(tier_name(BuildTier::kOptimised), "optimised");
}

}  // namespace
}  // namespace lizard
