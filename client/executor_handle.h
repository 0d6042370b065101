// ExecutorHandle: an executor of the worker, the lock that serialises calls
// on it between sessions and program builds, and the run that owns it: a
// run's session takes it over only after the previous run's session has let
// it go (RunSession), and rows are staged on it only while no run holds it
// (RowStaging).
//
//   std::vector<std::unique_ptr<ExecutorHandle>> executors;  // the worker's
//   std::lock_guard<std::mutex> l(executors[i]->mu);
//   executors[i]->executor->iterate(state, iteration, &agg, &stats);
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "exec/executor.h"
#include "exec/process/process_executor.h"

namespace lizard {

struct ExecutorHandle {
  std::unique_ptr<Executor> executor;
  // `executor` itself when it runs in a process of its own: a run's session
  // kills that process to stop a kernel, from any thread, without the lock.
  ProcessExecutor* process = nullptr;
  std::mutex mu;
  std::condition_variable freed;
  std::string owner;  // GUARDED_BY(mu): the run whose rows it holds, or empty
};

}  // namespace lizard
