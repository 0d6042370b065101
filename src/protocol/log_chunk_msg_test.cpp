// The log_chunk message: a run's printed lines from a worker.
#include <gtest/gtest.h>

#include "protocol/messages.h"

namespace lizard {
namespace {

TEST(LogChunkMsg, SurvivesEncodingAndDecoding) {
  LogChunkMsg m{"r4.1", {{0, 3, "hello from block 0"}, {-1, -1, "h\xc3\xa9llo \t x"}}, 7, 1234};
  auto frame = encode(m.to_message());
  auto view = decode_view(frame);
  ASSERT_TRUE(view.ok()) << view.status().message();
  EXPECT_EQ(view->type, MessageType::kLogChunk);
  EXPECT_STREQ(message_type_name(view->type), "log_chunk");
  auto back = LogChunkMsg::parse(view->header);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->run_id, "r4.1");
  ASSERT_EQ(back->lines.size(), 2u);
  EXPECT_EQ(back->lines[0].executor, 0);
  EXPECT_EQ(back->lines[0].iteration, 3);
  EXPECT_EQ(back->lines[0].text, "hello from block 0");
  EXPECT_EQ(back->lines[1].executor, -1);
  EXPECT_EQ(back->lines[1].text, "h\xc3\xa9llo \t x");
  EXPECT_EQ(back->cut_lines, 7u);
  EXPECT_EQ(back->cut_bytes, 1234u);
}

TEST(LogChunkMsg, CutCountsAreOptional) {
  auto back = LogChunkMsg::parse({{"run_id", "r1.0"}, {"lines", nlohmann::json::array()}});
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->cut_lines, 0u);
  EXPECT_TRUE(back->lines.empty());
}

TEST(LogChunkMsg, MalformedHeadersAreRefusedWithTheMessagesName) {
  EXPECT_FALSE(LogChunkMsg::parse({{"lines", nlohmann::json::array()}}).ok());
  auto negative = LogChunkMsg::parse(
      {{"run_id", "r1.0"}, {"lines", {{{"executor", -2}, {"iteration", 0}, {"text", "x"}}}}});
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("log_chunk"), std::string::npos);
  auto long_line = LogChunkMsg::parse(
      {{"run_id", "r1.0"},
       {"lines", {{{"executor", 0}, {"iteration", 0}, {"text", std::string(9000, 'x')}}}}});
  EXPECT_FALSE(long_line.ok());
  EXPECT_FALSE(LogChunkMsg::parse({{"run_id", "r1.0"}, {"lines", "hello"}}).ok());
}

}  // namespace
}  // namespace lizard
