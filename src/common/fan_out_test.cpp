#include "common/fan_out.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>

namespace lizard {
namespace {

TEST(FanOut, RunsEveryIndexOnceAtTheSameTime) {
  FanOut fan(4);
  for (int round = 0; round < 200; ++round) {
    std::atomic<int> arrived{0};
    std::mutex mu;
    std::set<size_t> seen;
    std::set<std::thread::id> threads;
    auto r = fan.run([&](size_t i) {
      {
        std::lock_guard<std::mutex> l(mu);
        seen.insert(i);
        threads.insert(std::this_thread::get_id());
      }
      // Every call waits for the others: only calls running together pass.
      ++arrived;
      const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (arrived < 4 && std::chrono::steady_clock::now() < end) std::this_thread::yield();
      return arrived >= 4 ? Status::Ok() : internal_error("not at the same time");
    });
    ASSERT_EQ(r.size(), 4u);
    for (const auto& s : r) ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(seen, (std::set<size_t>{0, 1, 2, 3}));
    EXPECT_EQ(threads.size(), 4u);
  }
}

TEST(FanOut, ReturnsEachCallsStatusInPlace) {
  FanOut fan(3);
  auto r = fan.run([](size_t i) { return i == 1 ? invalid_argument("one") : Status::Ok(); });
  EXPECT_TRUE(r[0].ok());
  EXPECT_EQ(r[1].code(), Code::kInvalidArgument);
  EXPECT_TRUE(r[2].ok());
  auto again = fan.run([](size_t) { return Status::Ok(); });  // earlier results do not linger
  for (const auto& s : again) EXPECT_TRUE(s.ok());
}

TEST(FanOut, OneRunsOnTheCallersThread) {
  FanOut fan(1);
  std::thread::id where;
  fan.run([&](size_t) {
    where = std::this_thread::get_id();
    return Status::Ok();
  });
  EXPECT_EQ(where, std::this_thread::get_id());
}

}  // namespace
}  // namespace lizard
