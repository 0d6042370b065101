// The build_ahead message, and the compiling note a progress message carries.
#include <gtest/gtest.h>

#include "protocol/messages.h"

namespace lizard {
namespace {

TEST(BuildAheadMsg, SurvivesEncodingAndDecoding) {
  BuildAheadMsg m{"abc123", {{"k", 6}, {"dims", 2}}};
  auto frame = encode(m.to_message());
  auto view = decode_view(frame);
  ASSERT_TRUE(view.ok()) << view.status().message();
  EXPECT_EQ(view->type, MessageType::kBuildAhead);
  EXPECT_STREQ(message_type_name(view->type), "build_ahead");
  auto back = BuildAheadMsg::parse(view->header);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->hash, "abc123");
  EXPECT_EQ(back->params, (nlohmann::json{{"k", 6}, {"dims", 2}}));
}

TEST(BuildAheadMsg, AHeaderWithoutAProgramOrWithBadParamsIsRefused) {
  EXPECT_FALSE(BuildAheadMsg::parse(nlohmann::json::object()).ok());
  auto r = BuildAheadMsg::parse({{"hash", "abc"}, {"params", 3}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("build_ahead"), std::string::npos);
}

TEST(ProgressMsg, SaysWhenARunsKernelsAreCompiling) {
  ProgressMsg m;
  m.run_id = "r4.0";
  m.compiling = true;
  m.compiling_build = "quick";
  auto frame = encode(m.to_message());
  auto view = decode_view(frame);
  ASSERT_TRUE(view.ok());
  auto back = ProgressMsg::parse(view->header);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->run_id, "r4.0");
  EXPECT_TRUE(back->compiling);
  EXPECT_EQ(back->compiling_build, "quick");
  auto rows = ProgressMsg::parse(ProgressMsg{"r4.0", 2, 1, 100}.to_message().header);
  ASSERT_TRUE(rows.ok());
  EXPECT_FALSE(rows->compiling);
  EXPECT_EQ(rows->compiling_build, "");
  EXPECT_EQ(rows->rows_done, 100);
}

}  // namespace
}  // namespace lizard
