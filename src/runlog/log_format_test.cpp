#include "runlog/log_format.h"

#include <gtest/gtest.h>

namespace lizard {
namespace {

TEST(LogFormat, TagsSayWorkerExecutorAndIteration) {
  EXPECT_EQ(log_line("w1", 0, 3, "hello from block 0"), "[w1 e0 it 3] hello from block 0");
  EXPECT_EQ(log_line("w1", 2, -1, "loading"), "[w1 e2] loading");
  EXPECT_EQ(log_line("w1", -1, 4, "x"), "[w1 hook it 4] x");
  EXPECT_EQ(log_line(kServerLogSource, -1, 7, "delta"), "[server it 7] delta");
  EXPECT_EQ(log_line(kServerLogSource, -1, -1, "setup"), "[server] setup");
  EXPECT_EQ(log_note("w1", "output cut"), "[w1] output cut");
}

TEST(LogFormat, LinesAreToldApartBySource) {
  EXPECT_TRUE(log_line_from("[w1 e0 it 3] x", "w1"));
  EXPECT_TRUE(log_line_from("[w1] output cut", "w1"));
  EXPECT_FALSE(log_line_from("[w12 e0 it 3] x", "w1"));
  EXPECT_FALSE(log_line_from("[w1 e0 it 3] x", "w2"));
  EXPECT_FALSE(log_line_from("w1", "w1"));
  EXPECT_TRUE(log_line_from("[server it 1] x", kServerLogSource));
}

TEST(LogFormat, SourcesAreShortNames) {
  EXPECT_TRUE(valid_log_source("w1"));
  EXPECT_TRUE(valid_log_source("server"));
  EXPECT_FALSE(valid_log_source(""));
  EXPECT_FALSE(valid_log_source("w 1"));
  EXPECT_FALSE(valid_log_source("../x"));
  EXPECT_FALSE(valid_log_source(std::string(65, 'w')));
}

}  // namespace
}  // namespace lizard
