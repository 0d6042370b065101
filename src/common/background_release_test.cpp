// Background release: an owner handed over is released, on a thread other
// than the one that dropped the last reference to it, and only then.
#include "common/background_release.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

namespace lizard {
namespace {

// Says on which thread it was destroyed.
struct Witness {
  explicit Witness(std::promise<std::thread::id>* p) : destroyed_on(p) {}
  std::promise<std::thread::id>* destroyed_on;
  ~Witness() { destroyed_on->set_value(std::this_thread::get_id()); }
};

TEST(BackgroundRelease, TheOwnerEndsOnAnotherThreadOnceTheLastReferenceIsDropped) {
  std::promise<std::thread::id> destroyed_on;
  auto ended = destroyed_on.get_future();
  std::shared_ptr<const void> ref =
      released_in_background(std::make_shared<Witness>(&destroyed_on));
  std::shared_ptr<const void> copy = ref;
  ref.reset();
  EXPECT_EQ(ended.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout)
      << "released while a reference remained";
  copy.reset();
  ASSERT_EQ(ended.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_NE(ended.get(), std::this_thread::get_id());
}

TEST(BackgroundRelease, ManyOwnersFromManyThreadsAreAllReleased) {
  std::atomic<int> live{0};
  struct Counted {
    std::atomic<int>* live;
    explicit Counted(std::atomic<int>* l) : live(l) { ++*live; }
    ~Counted() { --*live; }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) (void)released_in_background(std::make_shared<Counted>(&live));
    });
  for (auto& t : threads) t.join();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (live.load() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(live.load(), 0);
  EXPECT_EQ(released_in_background(nullptr), nullptr);
}

}  // namespace
}  // namespace lizard
