// ExecutorHandle: an executor of the worker, the lock that serialises calls
// on it between sessions and program builds, and the busy mark that says who
// holds it.  The mark has one owner at a time, an ExecutorClaim: a run's
// session takes the claim only after the previous run's session has let it
// go (RunSession), and rows are staged on it only while no run holds it
// (RowStaging).  A claim lets the executor go when it is destroyed, so that
// no path out of a session or a stage — a failure, a cancel, an abort —
// leaves the executor marked busy.
//
//   std::vector<std::unique_ptr<ExecutorHandle>> executors;  // the worker's
//   auto claim = ExecutorClaim::take(executors[i].get(), "r7.0", deadline, stopped);
//   if (!claim.ok()) return claim.status();   // still busy, or stopped
//   std::lock_guard<std::mutex> l(executors[i]->mu);
//   executors[i]->executor->iterate(state, iteration, &agg, &stats);
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "exec/executor.h"
#include "exec/process/owner_process_executor.h"

namespace lizard {

struct ExecutorHandle {
  std::unique_ptr<Executor> executor;
  // `executor` itself when it runs in a process of its own: a run's session
  // kills that process to stop a kernel, from any thread, without the lock.
  OwnerProcessExecutor* process = nullptr;
  std::mutex mu;
  std::condition_variable freed;
  // GUARDED_BY(mu): who holds it (a run's wire id, or a stage), or empty.
  // Written by ExecutorClaim alone.
  std::string owner;
  // Wakes whoever waits for an executor to be freed (a claim being taken),
  // so that it looks at its `stopped` flag again.
  void wake() {
    { std::lock_guard<std::mutex> l(mu); }
    freed.notify_all();
  }
};

// The busy mark of one executor, held from take() until the claim is
// destroyed or reset().  Move-only.
class ExecutorClaim {
 public:
  ExecutorClaim() = default;
  ~ExecutorClaim() { reset(); }
  ExecutorClaim(ExecutorClaim&& o) noexcept : h_(o.h_) { o.h_ = nullptr; }
  ExecutorClaim& operator=(ExecutorClaim&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = o.h_;
      o.h_ = nullptr;
    }
    return *this;
  }
  ExecutorClaim(const ExecutorClaim&) = delete;
  ExecutorClaim& operator=(const ExecutorClaim&) = delete;

  // Waits until `h` is free, then marks it held by `owner`.  Unavailable
  // ("still busy with <owner>") when it is not free by `deadline`;
  // cancelled when `stopped` turns true first (ExecutorHandle::wake()
  // makes a waiting take() look at it).
  static Result<ExecutorClaim> take(ExecutorHandle* h, const std::string& owner,
                                    SteadyClock::time_point deadline,
                                    const std::atomic<bool>& stopped);
  // Lets the executor go: clears the mark and wakes whoever waits for it.
  void reset();
  ExecutorHandle* handle() const { return h_; }
  explicit operator bool() const { return h_ != nullptr; }

 private:
  explicit ExecutorClaim(ExecutorHandle* h) : h_(h) {}
  ExecutorHandle* h_ = nullptr;
};

}  // namespace lizard
