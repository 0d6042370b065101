#include "hooks/hook_protocol.h"

#include <gtest/gtest.h>

namespace lizard {
namespace {

TEST(HookProtocol, ReadyCarriesTheHookSet) {
  for (int bits = 0; bits < 8; ++bits) {
    HookSet h{(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0};
    auto back = decode_ready(encode_ready(h));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->init, h.init);
    EXPECT_EQ(back->aggregate, h.aggregate);
    EXPECT_EQ(back->update, h.update);
  }
  auto failed = decode_ready(encode_failed("cannot open libx.so"));
  EXPECT_EQ(failed.status().message(), "cannot open libx.so");
}

TEST(HookProtocol, SetupRoundTrips) {
  HookSetup s;
  s.params = std::string("\x01\x00\x02\xff", 4);
  s.state = {24, 48, {{0, 8, 0, false}, {8, 8, 16, true}}};
  s.aggregate = {8, 16, {{0, 8, 0, true}}};
  s.values.generate_seed = 7;
  s.values.run_seed = 0xfedcba9876543210ull;
  const std::string frame = encode_setup(s);
  EXPECT_TRUE(is_setup_frame(frame));
  auto back = decode_setup(frame);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->params, s.params);
  ASSERT_EQ(back->state.members.size(), 2u);
  EXPECT_EQ(back->state.members[1].slot_offset, 16u);
  EXPECT_TRUE(back->state.members[1].pointer);
  EXPECT_EQ(back->aggregate.section_size, 16u);
  EXPECT_EQ(back->values.generate_seed, 7u);
  EXPECT_EQ(back->values.run_seed, 0xfedcba9876543210ull);
}

TEST(HookProtocol, ASetupWhoseMembersLeaveTheirBuffersIsRefused) {
  HookSetup s;
  s.state = {8, 16, {{0, 8, 12, false}}};  // an 8-byte value at 12 of 16 bytes
  EXPECT_FALSE(decode_setup(encode_setup(s)).ok());
  s.state = {8, 16, {{4, 8, 0, false}}};  // an 8-byte member at 4 of an 8-byte struct
  EXPECT_FALSE(decode_setup(encode_setup(s)).ok());
  std::string cut = encode_setup(HookSetup{});
  cut.pop_back();
  EXPECT_FALSE(decode_setup(cut).ok());
}

TEST(HookProtocol, CallsSplitIntoTheirTwoSections) {
  const std::string first = "abcdefgh", second = "0123";
  const std::string frame = encode_call_head(HookOp::kUpdate, 41, first.size()) + first + second;
  EXPECT_FALSE(is_setup_frame(frame));
  auto c = decode_call(frame);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->op, HookOp::kUpdate);
  EXPECT_EQ(c->iteration, 41);
  EXPECT_EQ(c->first, first);
  EXPECT_EQ(c->second, second);
  EXPECT_STREQ(hook_name(c->op), "update_global_state");
  // A first section longer than the frame.
  EXPECT_FALSE(decode_call(encode_call_head(HookOp::kInit, 0, 100) + "short").ok());
}

TEST(HookProtocol, ResultsCarryTheValueAndTheSection) {
  const std::string frame = encode_result_head(-3) + "state";  // the result views into it
  auto r = decode_result(frame);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->value, -3);
  EXPECT_EQ(r->section, "state");
  auto f = decode_result(encode_failed("a state of the wrong size"));
  EXPECT_EQ(f.status().message(), "a state of the wrong size");
  EXPECT_FALSE(decode_result("").ok());
}

}  // namespace
}  // namespace lizard
