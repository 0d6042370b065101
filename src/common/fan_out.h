// FanOut: runs f(i) for i in [0, n) at once on n - 1 threads it keeps, plus
// the caller's, and returns when all are done.  For work that repeats with
// little time between (a run's iterations over its GPUs), where starting a
// thread per call would cost more than the handover; for a one-off fan-out,
// for_each_parallel (parallel.h) does.
//
//   FanOut fan(gpus.size());
//   for (...) {
//     const std::vector<Status>& r = fan.run([&](size_t i) { return iterate_on(i); });
//   }
//
// run() is called from one thread at a time.  It allocates nothing: the
// task is passed by reference, and the results live in the FanOut until
// the next run().
#pragma once

#include <condition_variable>
#include <cstddef>
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
  template <typename F>
  const std::vector<Status>& run(const F& f) {
    return run_task(
        Task{&f, [](const void* p, size_t i) { return (*static_cast<const F*>(p))(i); }});
  }

 private:
  struct Task {  // a callable held by reference: f(i) is call(fn, i)
    const void* fn = nullptr;
    Status (*call)(const void*, size_t) = nullptr;
  };
  const std::vector<Status>& run_task(Task task);
  void serve(size_t i);

  const size_t n_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  Task task_;              // GUARDED_BY(mu_)
  uint64_t round_ = 0;     // GUARDED_BY(mu_)
  size_t pending_ = 0;     // GUARDED_BY(mu_)
  bool stopping_ = false;  // GUARDED_BY(mu_)
  std::vector<Status> results_;
  std::vector<std::thread> threads_;
};

}  // namespace lizard
