// IterationEngine: one iteration of a run on every executor the run holds
// on this worker, at once — the one engine behind both ways a run iterates
// here: an iteration the server sent (RunSession::iterate), and the loop
// this worker drives for a run placed on it alone (run_session_loop.cpp),
// which differ only in who then calls the IterationStep.  Each executor's
// rows run in slices that report progress (a run that reports rows) or in
// one; the slices run on a thread per executor, or, where every executor
// runs in a process of its own, are sent to all of them before any answer
// is awaited.  Partial aggregates of built-in reducers are folded here in
// row order; those of custom reducers are left one per executor or slice,
// in row order, for the aggregate hook.  Past the first iteration it
// allocates nothing: the aggregates land in slots kept from one iteration
// to the next.
//
//   IterationEngine engine;
//   engine.bind({&executors, &indices, &rows, &manifest, &params, progress, run_id, send});
//   LIZARD_RETURN_IF_ERROR(engine.run(state, iteration));
//   for (const SectionBuffer* p : engine.partials()) ...;  // engine.kernel_ms()
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "client/executor_handle.h"
#include "client/run_output.h"
#include "common/fan_out.h"
#include "common/status.h"
#include "program/layout.h"
#include "program/manifest.h"

namespace lizard {

class IterationEngine {
 public:
  // What a run gives the engine; every pointer must outlive its iterations.
  struct Run {
    std::vector<std::unique_ptr<ExecutorHandle>>* all = nullptr;  // the worker's executors
    const std::vector<size_t>* executors = nullptr;  // the run's, indices into `all`, row order
    const std::vector<int64_t>* rows = nullptr;      // each of the run's executors' rows
    const Manifest* manifest = nullptr;
    const ParamValues* params = nullptr;
    bool report_progress = false;  // slices that report their rows done
    std::string run_id;
    std::function<void(std::string frame)> send;  // progress reports go here
    // What executor processes print during an iteration goes here (flushed
    // as the iteration ends); null: it stays with the processes.
    RunOutput* output = nullptr;
  };
  void bind(Run run);

  // One iteration over `state` on every executor of the run.
  Status run(const SectionBuffer& state, int64_t iteration);
  // Its partial aggregates, in row order, valid until the next run().
  const std::vector<const SectionBuffer*>& partials() const { return partials_; }
  // The slowest executor's time in kernels, and in its calls (transfers too).
  double kernel_ms() const { return kernel_ms_; }
  // Executor i (of the run's) began the run on a quick build; the engine
  // follows it to its switch to the optimised one (exec/executor.h).
  void began_on_quick_build(size_t i);
  // Whether some executor ran the last iteration on a quick build.
  bool ran_on_quick_build() const { return ran_on_quick_; }
  double slowest_call_ms() const;

 private:
  // How many slices executor i runs an iteration in, and slice k's rows.
  int64_t slices_of(size_t i) const;
  int64_t slice_end(size_t i, int64_t k) const;
  // The aggregate slot of executor i's slice k, made at its first use.
  Result<SectionBuffer*> slot(size_t i, size_t k);
  // Executor i finished slice k: its times, and its progress reported.
  void slice_done(size_t i, int64_t k, int64_t iteration, const IterationStats& stats);
  Status run_on_threads(int64_t iteration, const SectionBuffer& state);
  Status run_in_processes(int64_t iteration, const SectionBuffer& state);
  std::mutex& lock_of(size_t i) { return (*run_.all)[(*run_.executors)[i]]->mu; }

  Run run_;
  std::unique_ptr<FanOut> fan_;
  std::vector<std::vector<SectionBuffer>> slots_;  // by executor, by slice
  std::vector<double> executor_ms_;                // each executor's time in kernels
  // Each executor's time in its iterate calls, transfers included (the
  // executor's own count, so that a loop can tell it from the time between).
  std::vector<double> executor_total_ms_;
  std::vector<char> sent_;  // run_in_processes: executors sent the current slice
  std::vector<const SectionBuffer*> partials_;
  double kernel_ms_ = 0;
  std::vector<char> on_quick_;  // by executor of the run: still on a quick build
  bool ran_on_quick_ = false;
};

}  // namespace lizard
