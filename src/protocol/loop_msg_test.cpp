// The loop messages: a run's iterations driven by its only worker.
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

TEST(LoopStepMsg, CarriesTimingsDoneAndErrors) {
  LoopStepMsg m;
  m.run_id = "r3.1";
  m.iteration = 9;
  m.kernel_ms = 0.25;
  m.ms = 0.5;
  m.last = true;
  auto back = decode(encode(m.to_message("agg+state")));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->type, MessageType::kLoopStep);
  auto h = LoopStepMsg::parse(back->header);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->iteration, 9);
  EXPECT_TRUE(h->ok);
  EXPECT_FALSE(h->unsupported);
  EXPECT_DOUBLE_EQ(h->kernel_ms, 0.25);
  EXPECT_DOUBLE_EQ(h->ms, 0.5);
  EXPECT_TRUE(h->last);

  LoopStepMsg failed;
  failed.ok = false;
  failed.unsupported = true;
  failed.error = "no update hook here";
  auto f = LoopStepMsg::parse(failed.to_message().header);
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(f->ok);
  EXPECT_TRUE(f->unsupported);
  EXPECT_EQ(f->error, "no update hook here");
}

TEST(LoopStepMsg, AHeaderOfTheWrongTypesIsRefused) {
  nlohmann::json h = {{"run_id", "r1"}, {"iteration", "nine"}};
  EXPECT_FALSE(LoopStepMsg::parse(h).ok());
  EXPECT_FALSE(LoopMsg::parse({{"max_iterations", true}}).ok());
}

TEST(Wire, AnUnknownMessageTypeIsRefused) {
  std::string frame = encode(LoopMsg{"r1", 0, 1}.to_message());
  frame[3] = static_cast<char>(200);  // a type number this build does not know
  EXPECT_FALSE(decode(frame).ok());
}

}  // namespace
}  // namespace lizard
