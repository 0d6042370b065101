// ExecutorClaim: the busy mark of an executor is held by one claim at a time
// and let go when the claim goes, on every path; a second claim waits for
// it, gives up at its deadline naming the holder, or stops when told to.
#include "client/executor_handle.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "client/aborted_runs.h"

namespace lizard {
namespace {

using std::chrono::milliseconds;

std::string owner_of(ExecutorHandle& h) {
  std::lock_guard<std::mutex> l(h.mu);
  return h.owner;
}

TEST(ExecutorClaim, TheMarkGoesWithTheClaimOnEveryPath) {
  ExecutorHandle h;
  std::atomic<bool> stopped{false};
  {
    auto claim = ExecutorClaim::take(&h, "r1.0", SteadyClock::now(), stopped);
    ASSERT_TRUE(claim.ok());
    EXPECT_EQ(owner_of(h), "r1.0");
    ExecutorClaim moved = std::move(claim).value();  // a move keeps one owner
    EXPECT_EQ(owner_of(h), "r1.0");
  }
  EXPECT_EQ(owner_of(h), "");
  auto again = ExecutorClaim::take(&h, "r2.0", SteadyClock::now(), stopped);
  ASSERT_TRUE(again.ok());
  again->reset();
  EXPECT_EQ(owner_of(h), "");
}

TEST(ExecutorClaim, ABusyExecutorIsWaitedForUntilTheDeadline) {
  ExecutorHandle h;
  std::atomic<bool> stopped{false};
  auto held = ExecutorClaim::take(&h, "r1.0", SteadyClock::now(), stopped);
  ASSERT_TRUE(held.ok());
  auto refused = ExecutorClaim::take(&h, "r2.0", SteadyClock::now() + milliseconds(50), stopped);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kUnavailable);
  EXPECT_EQ(refused.status().message(), "still busy with r1.0");

  std::thread freer([&] {
    std::this_thread::sleep_for(milliseconds(50));
    held->reset();
  });
  auto waited =
      ExecutorClaim::take(&h, "r2.0", SteadyClock::now() + std::chrono::seconds(10), stopped);
  freer.join();
  ASSERT_TRUE(waited.ok());
  EXPECT_EQ(owner_of(h), "r2.0");
}

TEST(ExecutorClaim, AWaitStopsWhenTold) {
  ExecutorHandle h;
  std::atomic<bool> stopped{false};
  auto held = ExecutorClaim::take(&h, "r1.0", SteadyClock::now(), stopped);
  ASSERT_TRUE(held.ok());
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(50));
    stopped = true;
    h.wake();
  });
  const auto t0 = SteadyClock::now();
  auto r = ExecutorClaim::take(&h, "r2.0", SteadyClock::now() + std::chrono::seconds(30), stopped);
  stopper.join();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kCancelled);
  EXPECT_LT(SteadyClock::now() - t0, std::chrono::seconds(10));
  EXPECT_EQ(owner_of(h), "r1.0");  // still the holder's
}

TEST(AbortedRuns, RemembersTheLatestAbortsUntilCleared) {
  AbortedRuns a;
  a.note("r1.0");
  EXPECT_TRUE(a.contains("r1.0"));
  EXPECT_FALSE(a.contains("r1.1"));
  for (size_t i = 0; i < AbortedRuns::kKept; ++i) a.note("r" + std::to_string(i + 2) + ".0");
  EXPECT_FALSE(a.contains("r1.0"));  // the oldest went
  EXPECT_TRUE(a.contains("r2.0"));
  a.clear();
  EXPECT_FALSE(a.contains("r2.0"));
}

}  // namespace
}  // namespace lizard
