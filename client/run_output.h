// RunOutput: what a run's kernels printed on this worker, on its way to the
// server.  After each call on an executor process that the run made (its
// rows' loading, each iteration, its end), collect() takes what the process
// printed during that call (exec/process/process_executor.h captures it) and
// tags each line with the executor and the iteration; flush() sends the lines
// gathered so far as one log_chunk, ahead of the reply they belong with.  At
// most kRunOutputBytes of lines are sent per run (runlog/output_bound.h);
// finish() sends how much was cut past that.
//
//   RunOutput output;
//   output.bind("r4.0", send);
//   e->receive_iterate(&agg, &stats);  output.collect(e, 0, iteration);
//   output.flush();                     // one log_chunk, if anything was printed
//   output.finish();                    // at the run's end
//
// collect() may be called from several threads at once; the rest from the
// run's thread.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "exec/process/owner_process_executor.h"
#include "protocol/messages.h"
#include "runlog/output_bound.h"

namespace lizard {

class RunOutput {
 public:
  // Starts a run: its wire id and where its log_chunks go.
  void bind(std::string run_id, std::function<void(std::string frame)> send);
  // What `process` (the worker's executor `executor`) printed since the last
  // take, as printed during `iteration` (-1: outside one).
  void collect(OwnerProcessExecutor* process, int64_t executor, int64_t iteration);
  // What executor `executor` (-1: the run's host hooks) printed during `iteration`.
  void add(int64_t executor, int64_t iteration, const OutputPipe::Taken& printed);
  // Sends the lines collected since the last flush.
  void flush();
  // Sends the rest, and how much the bound cut; the run's output ends here.
  void finish();

 private:
  void send_pending();  // with mu_ held

  std::mutex mu_;
  std::string run_id_;                           // GUARDED_BY(mu_)
  std::function<void(std::string frame)> send_;  // GUARDED_BY(mu_)
  OutputBound bound_;                            // GUARDED_BY(mu_)
  LogChunkMsg pending_;                          // GUARDED_BY(mu_)
  uint64_t pending_bytes_ = 0;                   // GUARDED_BY(mu_)
};

// Logs what `process` (the worker's executor `executor`) printed outside any
// run (while it built a program, say) to the worker's own log.
void log_output_outside_runs(OwnerProcessExecutor* process, int64_t executor);

}  // namespace lizard
