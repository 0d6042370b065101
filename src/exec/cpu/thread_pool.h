// ThreadPool: a fixed set of OS threads that run one job at a time.  The
// calling thread takes part as worker 0, so a pool of N threads starts
// N - 1.  A job may ask for fewer workers than the pool has: only those are
// woken, so a small job pays for no wake-up it cannot use (waking a sleeping
// thread costs from a few to tens of microseconds, longer than a small
// kernel takes).
//
//   ThreadPool pool(8);
//   pool.run([&](int worker) { ... });     // workers 0..7; returns when all are done
//   pool.run([&](int worker) { ... }, 1);  // on the calling thread alone
//   pool.run(job, pool.workers_for(chunks, last_job_us));
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace lizard {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(threads_.size()) + 1; }
  // Calls job(w) for every worker w in [0, workers) (clamped to [1, size()])
  // and waits for all of them.
  void run(const std::function<void(int)>& job) { run(job, size()); }
  void run(const std::function<void(int)>& job, int workers);

  // How many workers a job of `pieces` pieces of work wakes: no more than
  // there are pieces, and where the whole job's time is known (`work_us` >
  // 0, as from its last run), one per kMinWorkUs of it, so that no thread is
  // woken for less work than its wake-up costs.  A job of unknown time gets
  // the whole pool.
  static constexpr double kMinWorkUs = 25;
  int workers_for(uint64_t pieces, double work_us) const;

 private:
  // One started thread's wake-up: run() bumps `generation` to hand it a job.
  struct Slot {
    std::mutex mu;
    std::condition_variable wake;
    uint64_t generation = 0;
    bool stop = false;
  };
  void worker_loop(int worker);

  std::vector<std::unique_ptr<Slot>> slots_;  // slots_[w - 1] is worker w's
  std::vector<std::thread> threads_;
  const std::function<void(int)>* job_ = nullptr;
  std::atomic<int> running_{0};  // woken workers still in the job
  std::mutex done_mu_;
  std::condition_variable done_;
};

}  // namespace lizard
