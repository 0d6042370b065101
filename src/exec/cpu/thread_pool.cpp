#include "exec/cpu/thread_pool.h"

#include <algorithm>

#include "common/spin_wait.h"

namespace lizard {

ThreadPool::ThreadPool(int threads) {
  for (int w = 1; w < threads; ++w) slots_.push_back(std::make_unique<Slot>());
  for (int w = 1; w < threads; ++w) threads_.emplace_back([this, w] { worker_loop(w); });
}

ThreadPool::~ThreadPool() {
  for (auto& slot : slots_) {
    {
      std::lock_guard<std::mutex> lock(slot->mu);
      slot->stop = true;
    }
    slot->wake.notify_one();
  }
  for (auto& t : threads_) t.join();
}

void ThreadPool::run(const std::function<void(int)>& job, int workers) {
  const int n = std::clamp(workers, 1, size());
  if (n == 1) {
    job(0);
    return;
  }
  job_ = &job;
  running_.store(n - 1, std::memory_order_release);
  for (int w = 1; w < n; ++w) {
    Slot& slot = *slots_[w - 1];
    {
      std::lock_guard<std::mutex> lock(slot.mu);
      ++slot.generation;
    }
    slot.wake.notify_one();
  }
  job(0);
  // The others are at work by now, and finish about when this thread did:
  // poll for them rather than pay a wake-up of its own.
  auto done = [this] { return running_.load(std::memory_order_acquire) == 0; };
  if (!spin_until(done)) {
    std::unique_lock<std::mutex> lock(done_mu_);
    done_.wait(lock, done);
  }
  job_ = nullptr;
}

int ThreadPool::workers_for(uint64_t pieces, double work_us) const {
  uint64_t n = std::min<uint64_t>(static_cast<uint64_t>(size()), pieces);
  if (work_us > 0) n = std::min<uint64_t>(n, static_cast<uint64_t>(work_us / kMinWorkUs));
  return static_cast<int>(std::max<uint64_t>(1, n));
}

void ThreadPool::worker_loop(int worker) {
  Slot& slot = *slots_[worker - 1];
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(slot.mu);
      slot.wake.wait(lock, [&] { return slot.stop || slot.generation != seen; });
      if (slot.stop) return;
      seen = slot.generation;
    }
    (*job_)(worker);
    if (running_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(done_mu_);
      done_.notify_one();
    }
  }
}

}  // namespace lizard
