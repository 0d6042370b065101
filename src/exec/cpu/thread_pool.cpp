#include "exec/cpu/thread_pool.h"

namespace lizard {

ThreadPool::ThreadPool(int threads) {
  for (int w = 1; w < threads; ++w) threads_.emplace_back([this, w] { worker_loop(w); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::run(const std::function<void(int)>& job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &job;
    running_ = static_cast<int>(threads_.size());
    ++generation_;
  }
  start_.notify_all();
  job(0);
  std::unique_lock<std::mutex> lock(mu_);
  finished_.wait(lock, [this] { return running_ == 0; });
  job_ = nullptr;
}

void ThreadPool::worker_loop(int worker) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    (*job)(worker);
    std::lock_guard<std::mutex> lock(mu_);
    if (--running_ == 0) finished_.notify_one();
  }
}

}  // namespace lizard
