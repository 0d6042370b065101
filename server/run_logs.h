// RunLogs: what runs printed — their kernels' lines from each worker
// (log_chunk) and their host hooks' on the server — kept beside each run's
// record as <state_dir>/runs/<id>/output.log, one line each as
// runlog/log_format.h writes them, so that the log survives a restart and
// goes when the run's record does (RunStore::remove).  Each source (a worker,
// or the server's hooks) keeps at most kRunOutputBytes of a run; what is cut
// past that is said in one line.
//
// add() and note_cut() only queue the lines (a thread of its own appends them
// to the files), so that the worker hub's io thread never waits on a disk;
// read() returns the file and what is queued, and may block: call it off the
// io thread.
//
//   RunLogs logs(state_dir);
//   logs.add("r4", "w1", chunk.lines);                 // a worker's log_chunk
//   logs.note_cut("r4", "w1", chunk.cut_lines, chunk.cut_bytes);
//   Result<std::string> text = logs.read("r4", "w1");  // "" source: every line
//
// Thread-safe.  Run ids must be ones the run store accepts (a file name).
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "protocol/messages.h"
#include "runlog/output_bound.h"
#include "runlog/output_pipe.h"

namespace lizard {

class RunLogs {
 public:
  explicit RunLogs(std::string state_dir);
  ~RunLogs();  // writes what is queued
  RunLogs(const RunLogs&) = delete;
  RunLogs& operator=(const RunLogs&) = delete;

  // Lines of run `run_id` from `source` (a worker's id: its executors' and
  // hooks' lines; kServerLogSource: the server's hooks', executor ignored).
  void add(const std::string& run_id, const std::string& source, const std::vector<LogLine>& lines);
  // The source's output of the run (this attempt of it) ends here: adds what
  // it cut itself (a worker's count) to what was cut here, and, when anything
  // was, queues the line that says so.
  void note_cut(const std::string& run_id, const std::string& source, uint64_t cut_lines,
                uint64_t cut_bytes);
  // Where the output of a run's hooks on the server goes
  // (HookProcessOptions::output): its lines, as kServerLogSource's.
  std::function<void(int64_t iteration, const OutputPipe::Taken& printed)> hook_output(
      const std::string& run_id);
  // Forgets the bounds of a run that has ended (its log stays).
  void forget(const std::string& run_id);

  // The run's log, each line ending in '\n'; only `source`'s lines unless
  // `source` is empty.  "" for a run that printed nothing.
  Result<std::string> read(const std::string& run_id, const std::string& source) const;

 private:
  void queue(const std::string& run_id, const std::string& text);  // with mu_ held
  void write_loop();
  // Appends the queued text to the files; with write_mu_ held.
  void write_queued();
  std::string path_of(const std::string& run_id) const;

  const std::string state_dir_;
  // Held while queued text is on its way to a file, so that read() sees it
  // in the file or in the queue, never in neither.  Taken before mu_.
  mutable std::mutex write_mu_;
  mutable std::mutex mu_;
  std::condition_variable queued_cv_;
  std::map<std::string, std::map<std::string, OutputBound>> bounds_;  // GUARDED_BY(mu_)
  std::map<std::string, std::string> queued_;  // GUARDED_BY(mu_): text by run
  bool stopping_ = false;                      // GUARDED_BY(mu_)
  std::thread writer_;
};

}  // namespace lizard
