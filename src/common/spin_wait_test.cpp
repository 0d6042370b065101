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
