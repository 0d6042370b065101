#include "common/fan_out.h"

namespace lizard {

FanOut::FanOut(size_t n) : n_(n == 0 ? 1 : n), results_(n_) {
  for (size_t i = 1; i < n_; ++i) threads_.emplace_back([this, i] { serve(i); });
}

FanOut::~FanOut() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

const std::vector<Status>& FanOut::run_task(Task task) {
  if (n_ > 1) {
    {
      std::lock_guard<std::mutex> l(mu_);
      task_ = task;
      pending_ = n_ - 1;
      ++round_;
    }
    start_cv_.notify_all();
  }
  results_[0] = task.call(task.fn, 0);
  if (n_ > 1) {
    std::unique_lock<std::mutex> l(mu_);
    done_cv_.wait(l, [&] { return pending_ == 0; });
    task_ = Task{};
  }
  return results_;
}

void FanOut::serve(size_t i) {
  uint64_t seen = 0;
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> l(mu_);
      start_cv_.wait(l, [&] { return stopping_ || round_ != seen; });
      if (stopping_) return;
      seen = round_;
      task = task_;
    }
    Status st = task.call(task.fn, i);
    std::lock_guard<std::mutex> l(mu_);
    results_[i] = std::move(st);
    if (--pending_ == 0) done_cv_.notify_one();
  }
}

}  // namespace lizard
