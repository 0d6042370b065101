// FanOut: runs f(i) for i in [0, n) at once on n - 1 threads it keeps, plus
// the caller's, and returns when all are done.  For work that repeats with
// little time between (a run's iterations over its GPUs), where starting a
// thread per call would cost more than the handover; for a one-off fan-out,
// for_each_parallel (parallel.h) does.
//
//   FanOut fan(gpus.size());
//   for (...) {
//     std::vector<Status> r = fan.run([&](size_t i) { return iterate_on(i); });
//   }
//
// run() is called from one thread at a time.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "common/status.h"

namespace lizard {

class FanOut {
 public:
  explicit FanOut(size_t n);
  ~FanOut();
  FanOut(const FanOut&) = delete;
  FanOut& operator=(const FanOut&) = delete;

  size_t size() const { return n_; }
  std::vector<Status> run(const std::function<Status(size_t)>& f);

 private:
  void serve(size_t i);

  const size_t n_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<Status(size_t)>* task_ = nullptr;  // GUARDED_BY(mu_)
  uint64_t round_ = 0;                                   // GUARDED_BY(mu_)
  size_t pending_ = 0;                                   // GUARDED_BY(mu_)
  bool stopping_ = false;                                // GUARDED_BY(mu_)
  std::vector<Status> results_;
  std::vector<std::thread> threads_;
};

}  // namespace lizard
