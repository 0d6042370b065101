#include "runlog/output_lines.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lizard {
namespace {

std::vector<std::string> lines_of(const std::vector<std::string>& pieces, bool finish = true) {
  OutputLines lines;
  std::vector<std::string> out;
  auto emit = [&](std::string l) { out.push_back(std::move(l)); };
  for (const auto& p : pieces) lines.add(p, emit);
  if (finish) lines.finish(emit);
  return out;
}

TEST(OutputLines, JoinsPiecesIntoLines) {
  EXPECT_EQ(lines_of({"hel", "lo\nwor", "ld\n"}), (std::vector<std::string>{"hello", "world"}));
  EXPECT_EQ(lines_of({"a\n\nb\r\n"}), (std::vector<std::string>{"a", "", "b"}));
}

TEST(OutputLines, FinishEmitsALineWithoutItsNewline) {
  EXPECT_EQ(lines_of({"no newline"}, false), std::vector<std::string>{});
  EXPECT_EQ(lines_of({"no newline"}), std::vector<std::string>{"no newline"});
  EXPECT_EQ(lines_of({}), std::vector<std::string>{});
}

TEST(OutputLines, BinaryJunkBecomesQuestionMarks) {
  EXPECT_EQ(lines_of({std::string("a\0b\x01\xff\x1b[31m", 10) + "\n"}),
            std::vector<std::string>{"a?b???[31m"});
  // Valid UTF-8 stays; a sequence cut short does not.
  EXPECT_EQ(lines_of({"caf\xc3\xa9 \xe2\x82\n"}), std::vector<std::string>{"caf\xc3\xa9 ??"});
}

TEST(OutputLines, AHugeLineIsCutWithANote) {
  const std::string huge(OutputLines::kMaxLineBytes * 3, 'x');
  auto out = lines_of({huge.substr(0, 5000), huge.substr(5000), "\nnext\n"});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].substr(0, OutputLines::kMaxLineBytes),
            std::string(OutputLines::kMaxLineBytes, 'x'));
  EXPECT_NE(out[0].find("[8192 more bytes of this line cut]"), std::string::npos);
  EXPECT_EQ(out[1], "next");
}

TEST(OutputLines, WhatIsLoggedOutsideRunsIsBounded) {
  std::string printed;
  for (size_t i = 0; i < kMaxLoggedLines + 5; ++i) printed += "line\n";
  std::vector<std::string> logged;
  log_lines_of(printed, [&](std::string l) { logged.push_back(std::move(l)); });
  ASSERT_EQ(logged.size(), kMaxLoggedLines + 1);
  EXPECT_EQ(logged.back(), "... and 5 more lines, not logged");
}

}  // namespace
}  // namespace lizard
