#include "runlog/output_bound.h"

#include <gtest/gtest.h>

namespace lizard {
namespace {

TEST(OutputBound, KeepsLinesUntilTheBoundThenCountsTheRest) {
  OutputBound bound(10);
  EXPECT_TRUE(bound.admit(4));
  EXPECT_TRUE(bound.admit(6));
  EXPECT_FALSE(bound.admit(1));
  EXPECT_EQ(bound.kept_bytes(), 10u);
  EXPECT_EQ(bound.cut_lines(), 1u);
  EXPECT_EQ(bound.cut_bytes(), 1u);
}

TEST(OutputBound, NothingIsKeptAfterTheFirstLineThatDidNotFit) {
  OutputBound bound(10);
  EXPECT_TRUE(bound.admit(4));
  EXPECT_FALSE(bound.admit(7));
  EXPECT_FALSE(bound.admit(1));  // would fit, but the output is cut from the first
  EXPECT_EQ(bound.cut_lines(), 2u);
  EXPECT_EQ(bound.cut_bytes(), 8u);
}

TEST(OutputBound, TheNoticeSaysHowMuchWasCut) {
  OutputBound bound(kRunOutputBytes);
  EXPECT_TRUE(bound.admit(kRunOutputBytes));
  EXPECT_FALSE(bound.admit(100));
  bound.add_cut(2, 3 * 1024 * 1024);
  EXPECT_EQ(bound.cut_notice("per run per worker"),
            "output cut: 3 more lines (3.0 MiB) past the 1 MiB kept per run per worker");
}

TEST(OutputBound, SizesReadAsPeopleWriteThem) {
  EXPECT_EQ(byte_size_text(1), "1 byte");
  EXPECT_EQ(byte_size_text(1023), "1023 bytes");
  EXPECT_EQ(byte_size_text(1536), "1.5 KiB");
  EXPECT_EQ(byte_size_text(uint64_t{1} << 20), "1 MiB");
}

}  // namespace
}  // namespace lizard
