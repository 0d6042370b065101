#include "server/accept_backoff.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace lizard {
namespace {

using Clock = AcceptBackoff::Clock;
using std::chrono::milliseconds;

// A process out of descriptors fails every accept at once: 10,000 failures
// in three seconds log three lines, each with its count, and every retry
// waits.
TEST(AcceptBackoff, OutOfDescriptorsWaitsAndLogsOnceASecond) {
  AcceptBackoff b;
  const Clock::time_point t0{};
  int lines = 0;
  std::string last;
  for (int i = 0; i < 10000; ++i) {
    auto step = b.failed(EMFILE, "Too many open files", t0 + milliseconds(i * 3 / 10));
    EXPECT_EQ(step.delay, AcceptBackoff::kRetryDelay);
    if (!step.warning.empty()) {
      ++lines;
      last = step.warning;
    }
  }
  EXPECT_EQ(lines, 3);
  EXPECT_EQ(last,
            "accept failed: Too many open files (3333 failures since the last message); accepting "
            "again every 100 ms, serving the open connections meanwhile");
}

TEST(AcceptBackoff, EachResourceShortageWaits) {
  for (int err : {EMFILE, ENFILE, ENOBUFS, ENOMEM}) {
    AcceptBackoff b;
    EXPECT_EQ(b.failed(err, "x", Clock::now()).delay, AcceptBackoff::kRetryDelay) << err;
  }
  AcceptBackoff b;
  auto step = b.failed(ECONNABORTED, "Software caused connection abort", Clock::now());
  EXPECT_EQ(step.delay.count(), 0);
  EXPECT_EQ(step.warning, "accept failed: Software caused connection abort");
}

TEST(AcceptBackoff, RecoveryIsNotedOnceAndWithinTheSameRate) {
  AcceptBackoff b;
  const Clock::time_point t0{};
  EXPECT_EQ(b.accepted(t0), "");  // nothing failed
  EXPECT_FALSE(b.failed(EMFILE, "e", t0 + milliseconds(10)).warning.empty());
  EXPECT_TRUE(b.failed(EMFILE, "e", t0 + milliseconds(110)).warning.empty());
  // Within the second of the warning: no line yet.
  EXPECT_EQ(b.accepted(t0 + milliseconds(300)), "");
  EXPECT_EQ(b.accepted(t0 + milliseconds(1100)),
            "accepting connections again (after 1 more failed accepts)");
  EXPECT_EQ(b.accepted(t0 + milliseconds(5000)), "");
}

}  // namespace
}  // namespace lizard
