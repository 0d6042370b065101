#include "exec/cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace lizard {
namespace {

// Runs a job on `workers` of `pool` and returns how often each worker
// index was called.
std::vector<int> calls_per_worker(ThreadPool& pool, int workers) {
  std::vector<std::atomic<int>> calls(pool.size());
  pool.run([&](int w) { calls[w].fetch_add(1); }, workers);
  std::vector<int> out;
  for (auto& c : calls) out.push_back(c.load());
  return out;
}

TEST(ThreadPool, AWholePoolJobCallsEveryWorkerOnce) {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> calls(4);
  pool.run([&](int w) { calls[w].fetch_add(1); });
  for (auto& c : calls) EXPECT_EQ(c.load(), 1);
}

TEST(ThreadPool, AJobOfFewerWorkersCallsOnlyThose) {
  ThreadPool pool(6);
  EXPECT_EQ(calls_per_worker(pool, 3), (std::vector<int>{1, 1, 1, 0, 0, 0}));
  EXPECT_EQ(calls_per_worker(pool, 100), (std::vector<int>{1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(calls_per_worker(pool, 0), (std::vector<int>{1, 0, 0, 0, 0, 0}));
}

TEST(ThreadPool, AOneWorkerJobRunsOnTheCallingThread) {
  ThreadPool pool(4);
  std::thread::id ran_on;
  pool.run([&](int) { ran_on = std::this_thread::get_id(); }, 1);
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

// Jobs of changing sizes one after another: a worker left out of one job
// must still take part, exactly once, in the next that includes it, and run()
// must not return before every worker of its job is done.
TEST(ThreadPool, JobsOfChangingSizesEachCallTheirWorkersOnce) {
  ThreadPool pool(5);
  for (int round = 0; round < 2000; ++round) {
    const int workers = 1 + round % 5;
    std::vector<std::atomic<int>> calls(5);
    std::atomic<int> finished{0};
    pool.run(
        [&](int w) {
          calls[w].fetch_add(1);
          finished.fetch_add(1);
        },
        workers);
    ASSERT_EQ(finished.load(), workers) << "round " << round;
    for (int w = 0; w < 5; ++w) ASSERT_EQ(calls[w].load(), w < workers ? 1 : 0) << round;
  }
}

TEST(ThreadPool, WorkersForWakesNoThreadForLessWorkThanItsWakeUp) {
  ThreadPool pool(8);
  EXPECT_EQ(pool.workers_for(100, 0), 8);   // time unknown: the whole pool
  EXPECT_EQ(pool.workers_for(3, 0), 3);     // no more than there are pieces
  EXPECT_EQ(pool.workers_for(100, 10), 1);  // less than one wake-up's worth
  EXPECT_EQ(pool.workers_for(100, 3 * ThreadPool::kMinWorkUs), 3);
  EXPECT_EQ(pool.workers_for(100, 1e6), 8);
  EXPECT_EQ(pool.workers_for(2, 1e6), 2);
}

}  // namespace
}  // namespace lizard
