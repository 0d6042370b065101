// The per-iteration messages: their packed headers on the wire, and how the
// daemons route and check them without knowing their type.
#include "protocol/iteration_messages.h"

#include <gtest/gtest.h>

#include "protocol/messages.h"

namespace lizard {
namespace {

TEST(IterateMsg, SurvivesTheWireWithItsState) {
  auto back = decode(encode(IterateMsg{"r12.3", 41}.to_message("state-bytes")));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->type, MessageType::kIterate);
  EXPECT_EQ(back->payload, "state-bytes");
  auto h = IterateMsg::parse(back->packed);
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->run_id, "r12.3");
  EXPECT_EQ(h->iteration, 41);
}

TEST(IterateMsg, AFrameIsItsHeaderThenTheState) {
  // The server appends the state to the header's encoding (wire.h).
  const std::string state("\x01\x00\x02", 3);
  EXPECT_EQ(encode(IterateMsg{"r1.0", 2}.to_message()) + state,
            encode(IterateMsg{"r1.0", 2}.to_message(state)));
}

TEST(IterationResultMsg, CarriesKernelTimeAndErrors) {
  IterationResultMsg ok{"r2.0", 7, true, "", 1.25};
  const std::string frame = encode(ok.to_message("agg"));
  auto v = decode_view(frame);  // points into `frame`
  ASSERT_TRUE(v.ok());
  auto h = IterationResultMsg::parse(v->packed);
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->run_id, "r2.0");
  EXPECT_EQ(h->iteration, 7);
  EXPECT_TRUE(h->ok);
  EXPECT_DOUBLE_EQ(h->kernel_ms, 1.25);
  EXPECT_EQ(v->payload, "agg");
  EXPECT_EQ(reported_error(v.value()), std::nullopt);
  EXPECT_EQ(wire_run_id_of(v.value()), "r2.0");
  EXPECT_FALSE(h->quick_build);
  ok.quick_build = true;
  EXPECT_TRUE(IterationResultMsg::parse(ok.to_message().packed)->quick_build);

  IterationResultMsg failed{"r2.0", 8, false, "CUDA error: out of memory", 0};
  auto f = decode(encode(failed.to_message()));
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(IterationResultMsg::parse(f->packed)->ok);
  EXPECT_EQ(reported_error(f.value()), "CUDA error: out of memory");
  IterationResultMsg silent{"r2.0", 8, false, "", 0};
  EXPECT_EQ(reported_error(silent.to_message()), "failed");
}

TEST(LoopStepMsg, CarriesTimingsDoneAndErrors) {
  LoopStepMsg m;
  m.run_id = "r3.1";
  m.iteration = 9;
  m.kernel_ms = 0.25;
  m.ms = 0.5;
  m.fold_ms = 0.125;
  m.last = true;
  auto back = decode(encode(m.to_message("agg+state")));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->type, MessageType::kLoopStep);
  EXPECT_EQ(back->payload, "agg+state");
  auto h = LoopStepMsg::parse(back->packed);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->run_id, "r3.1");
  EXPECT_EQ(h->iteration, 9);
  EXPECT_TRUE(h->ok);
  EXPECT_FALSE(h->unsupported);
  EXPECT_DOUBLE_EQ(h->kernel_ms, 0.25);
  EXPECT_DOUBLE_EQ(h->ms, 0.5);
  EXPECT_DOUBLE_EQ(h->fold_ms, 0.125);
  EXPECT_TRUE(h->last);
  EXPECT_FALSE(h->quick_build);
  m.quick_build = true;
  EXPECT_TRUE(LoopStepMsg::parse(m.to_message().packed)->quick_build);

  LoopStepMsg failed;
  failed.run_id = "r3.1";
  failed.ok = false;
  failed.unsupported = true;
  failed.error = "no update hook here";
  auto f = LoopStepMsg::parse(failed.to_message().packed);
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(f->ok);
  EXPECT_TRUE(f->unsupported);
  EXPECT_FALSE(f->last);
  EXPECT_EQ(f->error, "no update hook here");
  EXPECT_EQ(reported_error(failed.to_message()), "no update hook here");
}

TEST(IterationMessages, ShortOrOverlongHeadersAreRefused) {
  const std::string packed = IterationResultMsg{"r1.0", 1, true, "", 2.0}.to_message().packed;
  for (size_t n = 0; n < packed.size(); ++n) {
    auto r = IterationResultMsg::parse(packed.substr(0, n));
    ASSERT_FALSE(r.ok()) << n << " bytes";
    EXPECT_NE(r.status().message().find("truncated"), std::string::npos);
  }
  auto longer = IterationResultMsg::parse(packed + "x");
  ASSERT_FALSE(longer.ok());
  EXPECT_NE(longer.status().message().find("1 bytes too many"), std::string::npos);
  // A header of another layout: an iterate header is shorter than a loop step's.
  EXPECT_FALSE(LoopStepMsg::parse(IterateMsg{"r1.0", 1}.to_message().packed).ok());
  EXPECT_FALSE(IterateMsg::parse(LoopStepMsg{}.to_message().packed).ok());
  std::string two = packed;
  two[8 + 4 + 8] = 2;  // the ok flag, after the run id's length and bytes and the iteration
  auto flag = IterationResultMsg::parse(two);
  ASSERT_FALSE(flag.ok());
  EXPECT_NE(flag.status().message().find("neither 0 nor 1"), std::string::npos);
  // A run id whose length runs past the header.
  EXPECT_FALSE(IterateMsg::parse(std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8)).ok());
}

TEST(IterationMessages, AMalformedReplyIsReportedAsTheWorkersFailure) {
  Message bad{MessageType::kIterationResult, nlohmann::json::object(), "", "junk"};
  auto error = reported_error(bad);
  ASSERT_TRUE(error.has_value());
  EXPECT_NE(error->find("iteration_result"), std::string::npos);
  EXPECT_EQ(wire_run_id_of(bad), "");
}

TEST(IterationMessages, JsonRepliesAreReadTheSameWay) {
  RunReadyMsg ready{"r4.0", false, "not built", 0, false, {}};
  EXPECT_EQ(wire_run_id_of(ready.to_message()), "r4.0");
  EXPECT_EQ(reported_error(ready.to_message()), "not built");
  ready.ok = true;
  EXPECT_EQ(reported_error(ready.to_message()), std::nullopt);
  EXPECT_EQ(wire_run_id_of(WelcomeMsg{"w1"}.to_message()), "");
}

}  // namespace
}  // namespace lizard
