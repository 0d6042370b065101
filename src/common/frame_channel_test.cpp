#include "common/frame_channel.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tests/allocations.h"

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

// Whether `fd` is open in this process.
bool is_open(int fd) {
  return ::fcntl(fd, F_GETFD) >= 0;
}

// A descriptor sent with a frame comes with that frame only, even when the
// frame is large and crosses in many reads; one not taken is closed once the
// next frame is awaited.
TEST(FrameChannel, ADescriptorArrivesWithItsFrameAlone) {
  auto ends = FrameChannel::pair();
  ASSERT_TRUE(ends.ok());
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  const std::string big(8 << 20, 'b');
  std::thread sender([&] {
    std::string_view parts[] = {"head:", big};
    ASSERT_TRUE(ends->second.send_with_descriptor(parts, 2, p[1]).ok());
    ASSERT_TRUE(ends->second.send("plain").ok());
  });
  auto first = ends->first.receive(5000);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->size(), 5 + big.size());
  OwnedFd fd = ends->first.take_descriptor();
  ASSERT_GE(fd.get(), 0);
  ASSERT_EQ(::write(fd.get(), "z", 1), 1);  // the same pipe's write end
  char c = 0;
  ASSERT_EQ(::read(p[0], &c, 1), 1);
  EXPECT_EQ(c, 'z');
  EXPECT_EQ(ends->first.receive(5000).value(), "plain");
  EXPECT_LT(ends->first.take_descriptor().get(), 0);
  sender.join();

  // Left untaken: closed when the next frame is awaited.
  std::string_view part = "again";
  ASSERT_TRUE(ends->second.send_with_descriptor(&part, 1, p[1]).ok());
  ASSERT_TRUE(ends->first.receive(5000).ok());
  int open_before = 0;
  for (int f = 3; f < 1024; ++f) open_before += is_open(f);
  EXPECT_EQ(ends->first.receive(20).status().code(), Code::kCancelled);
  int open_after = 0;
  for (int f = 3; f < 1024; ++f) open_after += is_open(f);
  EXPECT_EQ(open_after, open_before - 1);
  ::close(p[0]);
  ::close(p[1]);
}

// Several descriptors cross with one frame, in the order sent; more than a
// frame may carry are refused before anything is sent.
TEST(FrameChannel, SeveralDescriptorsArriveInTheirOrder) {
  auto ends = FrameChannel::pair();
  ASSERT_TRUE(ends.ok());
  int pipes[3][2];
  for (auto& p : pipes) ASSERT_EQ(::pipe(p), 0);
  const int fds[] = {pipes[0][1], pipes[1][1], pipes[2][1]};
  std::string_view part = "three";
  ASSERT_TRUE(ends->second.send_with_descriptors(&part, 1, fds, 3).ok());
  ASSERT_EQ(ends->first.receive(5000).value(), "three");
  std::vector<OwnedFd> got = ends->first.take_descriptors();
  ASSERT_EQ(got.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const char c = static_cast<char>('0' + i);
    ASSERT_EQ(::write(got[i].get(), &c, 1), 1);
    char back = 0;
    ASSERT_EQ(::read(pipes[i][0], &back, 1), 1);
    EXPECT_EQ(back, c);
  }
  std::vector<int> too_many(FrameChannel::kMaxDescriptors + 1, pipes[0][1]);
  EXPECT_EQ(ends->second.send_with_descriptors(&part, 1, too_many.data(), too_many.size()).code(),
            Code::kInvalidArgument);
  ASSERT_TRUE(ends->second.send("next").ok());
  EXPECT_EQ(ends->first.receive(5000).value(), "next");
  EXPECT_TRUE(ends->first.take_descriptors().empty());
  for (auto& p : pipes) {
    ::close(p[0]);
    ::close(p[1]);
  }
}

// Whether `fd` has bytes waiting (without taking them).
bool socket_has_bytes(int fd) {
  char c;
  return ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

// Once the end that made the mailboxes has had a frame through one, small
// frames both ways cross without touching the socket.
TEST(FrameChannelMailbox, SmallFramesSkipTheSocketOnceThePeerUsedTheMailbox) {
  if (const char* off = std::getenv("LIZARD_FRAME_MAILBOX"); off && std::string(off) == "0")
    GTEST_SKIP() << "mailboxes turned off (LIZARD_FRAME_MAILBOX=0)";
  auto ends = FrameChannel::pair();
  ASSERT_TRUE(ends.ok());
  auto& [maker, helper] = *ends;
  ASSERT_GE(maker.mailbox_fd(), 0);
  // The helper's end knows the maker reads its mailbox; the maker does not
  // know that of the helper yet, and uses the socket.
  ASSERT_TRUE(maker.send("first").ok());
  EXPECT_TRUE(socket_has_bytes(helper.fd()));
  EXPECT_EQ(helper.receive(1000).value(), "first");
  ASSERT_TRUE(helper.send("reply").ok());
  EXPECT_FALSE(socket_has_bytes(maker.fd()));
  EXPECT_EQ(maker.receive(1000).value(), "reply");
  ASSERT_TRUE(maker.send("second").ok());
  EXPECT_FALSE(socket_has_bytes(helper.fd()));
  EXPECT_EQ(helper.receive(1000).value(), "second");
}

TEST(FrameChannelMailbox, TurnedOffByTheEnvironment) {
  ::setenv("LIZARD_FRAME_MAILBOX", "0", 1);
  auto ends = FrameChannel::pair();
  ::unsetenv("LIZARD_FRAME_MAILBOX");
  ASSERT_TRUE(ends.ok());
  EXPECT_EQ(ends->first.mailbox_fd(), -1);
  ASSERT_TRUE(ends->second.send("by the socket").ok());
  EXPECT_TRUE(socket_has_bytes(ends->first.fd()));
  EXPECT_EQ(ends->first.receive(1000).value(), "by the socket");
}

// Frames sent one after another, with no reply between, some too large for
// the mailbox and some not, arrive in the order they were sent.
TEST(FrameChannelMailbox, MixedSizesArriveInTheOrderSent) {
  auto ends = FrameChannel::pair();
  ASSERT_TRUE(ends.ok());
  auto& [maker, helper] = *ends;
  const std::string big(FrameMailbox::kCapacity + 1, 'b');
  std::vector<std::string> sent = {"s1", big, "s2", "s3", big + "x", "s4"};
  std::thread writer([&] {
    for (const auto& f : sent) EXPECT_TRUE(helper.send(f).ok());
  });
  for (const auto& f : sent) {
    auto got = maker.receive(5000);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(got->size(), f.size());
    EXPECT_EQ(*got, f);
  }
  writer.join();
  // receive_into takes mailbox frames as well.
  ASSERT_TRUE(helper.send("into").ok());
  std::vector<uint8_t> into;
  ASSERT_TRUE(maker.receive_into(&into, 1000).ok());
  EXPECT_EQ(std::string(into.begin(), into.end()), "into");
}

// A receiver that stopped polling and sleeps on the socket is woken by a
// frame put in its mailbox.
TEST(FrameChannelMailbox, ASleepingReceiverIsWokenByAMailboxFrame) {
  auto ends = FrameChannel::pair();
  ASSERT_TRUE(ends.ok());
  auto& [maker, helper] = *ends;
  std::atomic<bool> got{false};
  std::thread reader([&] {
    auto f = maker.receive(20000);
    EXPECT_TRUE(f.ok()) << f.status().message();
    EXPECT_EQ(f.ok() ? *f : "", "late");
    got = true;
  });
  // Longer than any polling budget: the reader is asleep by now.
  std::this_thread::sleep_for(std::chrono::milliseconds(100 + spin_budget_us() / 100));
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(helper.send("late").ok());
  reader.join();
  EXPECT_TRUE(got);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

// A peer that put a frame in the mailbox and then went away: the frame is
// still read, and then the end.
TEST(FrameChannelMailbox, AFrameLeftByAPeerThatClosedIsReadBeforeTheEnd) {
  auto ends = FrameChannel::pair();
  ASSERT_TRUE(ends.ok());
  auto& [maker, helper] = *ends;
  ASSERT_TRUE(helper.send("last words").ok());
  helper.close();
  EXPECT_EQ(maker.receive(1000).value(), "last words");
  EXPECT_EQ(maker.receive(1000).status().code(), Code::kUnavailable);
}

TEST(FrameChannelMailbox, AReceiveThatTimesOutLeavesTheNextFrameWhole) {
  auto ends = FrameChannel::pair();
  ASSERT_TRUE(ends.ok());
  auto& [maker, helper] = *ends;
  EXPECT_EQ(maker.receive(5).status().code(), Code::kCancelled);
  ASSERT_TRUE(helper.send("after").ok());
  EXPECT_EQ(maker.receive(1000).value(), "after");
}

// Request and reply, many times, with sizes on both sides of the mailbox's
// capacity and pauses that let the receiver fall asleep now and then: every
// frame arrives whole and in order.
TEST(FrameChannelMailbox, ManyRoundTripsOfMixedSizes) {
  auto ends = FrameChannel::pair();
  ASSERT_TRUE(ends.ok());
  auto& [maker, helper] = *ends;
  constexpr int kRounds = 3000;
  auto frame_of = [](int i) {
    const size_t size = i % 97 == 0 ? FrameMailbox::kCapacity + 17 : static_cast<size_t>(i % 301);
    std::string f(size, static_cast<char>('a' + i % 26));
    if (!f.empty()) f[0] = static_cast<char>(i % 127);
    return f;
  };
  std::thread echo([&] {
    for (int i = 0; i < kRounds; ++i) {
      auto f = helper.receive(20000);
      ASSERT_TRUE(f.ok()) << f.status().message();
      ASSERT_EQ(*f, frame_of(i)) << "round " << i;
      if (i % 500 == 499) std::this_thread::sleep_for(std::chrono::milliseconds(30));
      ASSERT_TRUE(helper.send(frame_of(i + 1)).ok());
    }
  });
  for (int i = 0; i < kRounds; ++i) {
    ASSERT_TRUE(maker.send(frame_of(i)).ok());
    auto f = maker.receive(20000);
    ASSERT_TRUE(f.ok()) << f.status().message();
    ASSERT_EQ(*f, frame_of(i + 1)) << "round " << i;
  }
  echo.join();
}

// An iteration's request and reply, over the mailbox (small frames) and
// over the socket (a frame larger than a mailbox), once the buffers they
// are received into have grown: no allocation on either side.
TEST(FrameChannel, RoundTripsIntoReusedBuffersAllocateNothing) {
  auto ends = FrameChannel::pair();
  ASSERT_TRUE(ends.ok());
  auto& [worker, host] = *ends;
  const std::string small(200, 's'), large(FrameMailbox::kCapacity + 100, 'l');
  std::string at_host, at_worker;
  auto round_trip = [&](const std::string& request) {
    const std::string_view parts[] = {"op", request};
    ASSERT_TRUE(worker.send_parts(parts, 2).ok());
    ASSERT_TRUE(host.receive_into(&at_host, 1000).ok());
    ASSERT_TRUE(host.send(at_host).ok());
    ASSERT_TRUE(worker.receive_into(&at_worker, 1000).ok());
  };
  for (int i = 0; i < 3; ++i) {
    round_trip(large);
    round_trip(small);
  }
  const uint64_t before = testing::allocations();
  for (int i = 0; i < 50; ++i) {
    round_trip(i % 10 == 0 ? large : small);
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_EQ(testing::allocations() - before, 0u);
  EXPECT_EQ(at_worker, "op" + small);
}

}  // namespace
}  // namespace lizard
