#include "common/frame_channel.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace lizard {
namespace {

// A frame whose length arrives in pieces across receives that time out is
// still read whole: a caller may wait in short slices.
TEST(FrameChannel, ALengthSplitAcrossTimedOutReceivesIsKept) {
  auto ends = FrameChannel::pair();
  ASSERT_TRUE(ends.ok());
  FrameChannel& reader = ends->first;
  const int writer = ends->second.fd();
  const char length[8] = {5, 0, 0, 0, 0, 0, 0, 0};
  ASSERT_EQ(::write(writer, length, 3), 3);
  EXPECT_EQ(reader.receive(30).status().code(), Code::kCancelled);
  ASSERT_EQ(::write(writer, length + 3, 2), 2);
  EXPECT_EQ(reader.receive(30).status().code(), Code::kCancelled);
  ASSERT_EQ(::write(writer, length + 5, 3), 3);
  ASSERT_EQ(::write(writer, "hello", 5), 5);
  auto frame = reader.receive(1000);
  ASSERT_TRUE(frame.ok()) << frame.status().message();
  EXPECT_EQ(*frame, "hello");
  // The next frame starts afresh.
  ASSERT_TRUE(ends->second.send("again").ok());
  EXPECT_EQ(reader.receive(1000).value(), "again");
}

TEST(FrameChannel, AClosedPeerReadsAsUnavailable) {
  auto ends = FrameChannel::pair();
  ASSERT_TRUE(ends.ok());
  ends->second.close();
  EXPECT_EQ(ends->first.receive(1000).status().code(), Code::kUnavailable);
}

}  // namespace
}  // namespace lizard
