#include "common/spin_wait.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "common/mailbox.h"

namespace lizard {
namespace {

using Clock = std::chrono::steady_clock;

TEST(SpinWait, SeesAFlagSetWithinTheBudget) {
  std::atomic<bool> flag{false};
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    flag = true;
  });
  EXPECT_TRUE(spin_until([&] { return flag.load(); }, 2'000'000));
  setter.join();
}

TEST(SpinWait, GivesUpWhenTheBudgetHasPassed) {
  const auto t0 = Clock::now();
  int calls = 0;
  EXPECT_FALSE(spin_until([&] { return ++calls < 0; }, 2000));
  EXPECT_GE(Clock::now() - t0, std::chrono::microseconds(2000));
  EXPECT_GT(calls, 1);
}

TEST(SpinWait, AZeroBudgetAsksOnce) {
  int calls = 0;
  EXPECT_FALSE(spin_until([&] { return ++calls < 0; }, 0));
  EXPECT_EQ(calls, 1);
}

TEST(AdaptiveSpin, PollsForTwiceTheLastWaitBetweenTheBudgetAndTenTimesIt) {
  const int64_t base = spin_budget_us();
  if (base <= 0) GTEST_SKIP() << "LIZARD_SPIN_US=0 turns polling off";
  AdaptiveSpin spin;
  EXPECT_EQ(spin.budget_us(), base);
  spin.waited_us(base / 4);  // a quick answer: the budget stays
  EXPECT_EQ(spin.budget_us(), base);
  spin.waited_us(base * 3);  // a steady 3x the budget (a kernel's length)
  EXPECT_EQ(spin.budget_us(), base * 6);
  spin.waited_us(base * 7);  // twice that would pass the most
  EXPECT_EQ(spin.budget_us(), base * AdaptiveSpin::kMaxFactor);
  spin.waited_us(base * 3);
  EXPECT_EQ(spin.budget_us(), base * 6);
}

TEST(AdaptiveSpin, AWaitLongerThanItsMostBringsItBackToTheBudget) {
  const int64_t base = spin_budget_us();
  if (base <= 0) GTEST_SKIP() << "LIZARD_SPIN_US=0 turns polling off";
  AdaptiveSpin spin;
  spin.waited_us(base * 4);
  ASSERT_EQ(spin.budget_us(), base * 8);
  spin.waited_us(base * AdaptiveSpin::kMaxFactor + 1);  // an idle peer
  EXPECT_EQ(spin.budget_us(), base);
  spin.waited_us(INT64_MAX);  // a wait that ran out of time
  EXPECT_EQ(spin.budget_us(), base);
}

TEST(AdaptiveSpin, ExpectSoonPollsTheNextWaitForTheLongest) {
  const int64_t base = spin_budget_us();
  if (base <= 0) GTEST_SKIP() << "LIZARD_SPIN_US=0 turns polling off";
  AdaptiveSpin spin;
  spin.expect_soon();  // a loop's first reply: no cadence yet
  EXPECT_EQ(spin.budget_us(), base * AdaptiveSpin::kMaxFactor);
  spin.waited_us(base / 4);  // then the cadence sets it
  EXPECT_EQ(spin.budget_us(), base);
}

// Whether the consumer polls or sleeps, what was pushed is what it pops, in order.
TEST(SpinWait, AMailboxHandsOverEveryItemInOrder) {
  Mailbox<int> box;
  constexpr int kItems = 2000;
  std::thread producer([&] {
    for (int i = 0; i < kItems; ++i) {
      box.push(i);
      if (i % 100 == 0) std::this_thread::sleep_for(std::chrono::microseconds(1500));
    }
  });
  for (int i = 0; i < kItems; ++i) {
    auto v = box.pop_for(std::chrono::seconds(10));
    ASSERT_TRUE(v.has_value()) << i;
    EXPECT_EQ(*v, i);
  }
  producer.join();
  EXPECT_FALSE(box.try_pop().has_value());
  box.close();
  EXPECT_FALSE(box.pop().has_value());
}

}  // namespace
}  // namespace lizard
