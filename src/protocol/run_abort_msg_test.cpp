// The run_abort message: the server tells a worker to stop a run at once.
#include <gtest/gtest.h>

#include "protocol/messages.h"

namespace lizard {
namespace {

TEST(RunAbortMsg, SurvivesEncodingAndDecoding) {
  RunAbortMsg m{"r7.1", "cancelled"};
  auto frame = encode(m.to_message());
  auto view = decode_view(frame);
  ASSERT_TRUE(view.ok()) << view.status().message();
  EXPECT_EQ(view->type, MessageType::kRunAbort);
  EXPECT_STREQ(message_type_name(view->type), "run_abort");
  auto back = RunAbortMsg::parse(view->header);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->run_id, "r7.1");
  EXPECT_EQ(back->reason, "cancelled");
}

TEST(RunAbortMsg, AHeaderWithoutARunIsRefused) {
  EXPECT_FALSE(RunAbortMsg::parse(nlohmann::json::object()).ok());
  EXPECT_FALSE(RunAbortMsg::parse({{"run_id", 3}}).ok());
  auto r = RunAbortMsg::parse({{"run_id", ""}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("run_abort"), std::string::npos);
}

}  // namespace
}  // namespace lizard
