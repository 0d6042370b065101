// The loop message: a run's iterations driven by its only worker
// (its steps: iteration_messages_test.cpp).
#include <gtest/gtest.h>

#include "protocol/messages.h"

namespace lizard {
namespace {

TEST(LoopMsg, SurvivesTheWireWithItsState) {
  LoopMsg m{"r3.1", 7, 50};
  auto frame = encode(m.to_message("state-bytes"));
  auto back = decode(frame);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->type, MessageType::kLoop);
  EXPECT_EQ(back->payload, "state-bytes");
  auto h = LoopMsg::parse(back->header);
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->run_id, "r3.1");
  EXPECT_EQ(h->first_iteration, 7);
  EXPECT_EQ(h->max_iterations, 50);
}

TEST(LoopMsg, AHeaderOfTheWrongTypesIsRefused) {
  EXPECT_FALSE(LoopMsg::parse({{"max_iterations", true}}).ok());
}

TEST(Wire, AnUnknownMessageTypeIsRefused) {
  std::string frame = encode(LoopMsg{"r1", 0, 1}.to_message());
  frame[3] = static_cast<char>(200);  // a type number this build does not know
  EXPECT_FALSE(decode(frame).ok());
}

}  // namespace
}  // namespace lizard
