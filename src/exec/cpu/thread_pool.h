// ThreadPool: a fixed set of OS threads that run one job at a time, all of
// them together.  The calling thread takes part as worker 0, so a pool of N
// threads starts N - 1.
//
//   ThreadPool pool(8);
//   pool.run([&](int worker) { ... });  // returns when every worker is done
#pragma once

#include <condition_variable>
#include <functional>
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
  // Calls job(w) for every worker w in [0, size()) and waits for all of them.
  void run(const std::function<void(int)>& job);

 private:
  void worker_loop(int worker);

  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable start_;
  std::condition_variable finished_;
  const std::function<void(int)>* job_ = nullptr;
  uint64_t generation_ = 0;
  int running_ = 0;
  bool stop_ = false;
};

}  // namespace lizard
