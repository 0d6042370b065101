// CheckpointWriter: writes runs' checkpoints (run_store.h) to the run store
// on a thread of its own, so that a run driver hands over its checkpoint
// after each iteration and goes on with the next one instead of waiting for
// the store.  Only the latest pending checkpoint of a run is kept: when the
// driver is faster than the store, the intermediate ones are skipped, and a
// restarted server resumes from the latest that was written — a few
// iterations back at worst, which the run then repeats.
//
//   CheckpointWriter writer(store);
//   writer.save("r3", cp);      // returns at once; cp replaces r3's pending one
//   writer.forget("r3");        // before r3's finished record drops its checkpoint
//   writer.flush();             // everything handed over is written
//
// The destructor writes what is pending before it returns, so a server that
// shuts down leaves each unfinished run at its latest checkpoint.  A failed
// write is logged; the run goes on.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "server/run_store.h"

namespace lizard {

class CheckpointWriter {
 public:
  explicit CheckpointWriter(RunStore* store);
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Hands over `cp` for run `run_id`, replacing one not yet written.
  void save(const std::string& run_id, RunCheckpoint cp);
  // Drops the run's pending checkpoint and waits for a write of it under way,
  // so that nothing of the run is written after this returns.
  void forget(const std::string& run_id);
  // Returns once everything handed over before the call is written.
  void flush();

 private:
  void write_loop();

  RunStore* store_;
  std::mutex write_mu_;  // held while writing; forget() waits on it
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, RunCheckpoint> pending_;  // GUARDED_BY(mu_)
  bool writing_ = false;                          // GUARDED_BY(mu_)
  bool stopping_ = false;                         // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace lizard
