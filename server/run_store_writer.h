// RunStoreWriter: writes what a run leaves in the run store (run_store.h)
// while it goes (its request and record where nobody has been answered yet,
// its record as it starts and loads, its checkpoint after each iteration) on
// a thread of its own, so that the run hands them over and goes on instead of
// waiting for the disk.  Only the latest pending record and checkpoint of a
// run are kept: when the run is faster than the store, or hands over
// checkpoints faster than one every kCheckpointEvery, the intermediate ones
// are skipped.  A run's request is written before its record.
//
// What is handed over here is lost if the server dies before it is written:
// only writes nobody has been told about come here.  A crash then leaves the
// run as the store last had it (a few iterations back, or queued rather than
// running), which a restarted server resumes; a run submitted with ?wait=1
// whose request was not yet written is gone, its submitter having been
// answered nothing.  Writes that answer a request (a run accepted with 202,
// a finished run) are made by their callers, on their own thread.
//
//   RunStoreWriter writer(store);
//   writer.save_submission("r3", body, 3, "queued", record);  // returns at once
//   writer.save_record("r3", 3, "running", record);
//   writer.save_checkpoint("r3", cp);         // replaces r3's pending one
//   writer.settle("r3");   // before r3's finished record: its request is
//                          // written, the rest dropped
//   writer.flush();        // everything handed over is written
//
// The destructor writes what is pending before it returns, so a server that
// shuts down leaves each unfinished run as it last was.  A failed write is
// logged; the run goes on.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "common/clock.h"
#include "server/run_store.h"

namespace lizard {

class RunStoreWriter {
 public:
  // A run's checkpoints are written at most once every `checkpoint_every`
  // (its first at once): a run of short iterations costs the store a few
  // writes a second, not one an iteration, and a restarted server resumes it
  // at most that much of its work back.
  static constexpr std::chrono::milliseconds kCheckpointEvery{100};

  explicit RunStoreWriter(RunStore* store,
                          std::chrono::milliseconds checkpoint_every = kCheckpointEvery);
  ~RunStoreWriter();
  RunStoreWriter(const RunStoreWriter&) = delete;
  RunStoreWriter& operator=(const RunStoreWriter&) = delete;

  // Hands over the request run `run_id` was submitted with, and its first
  // record: the request is written first, and where it cannot be, no record
  // of the run is (a stored unfinished record without its request could not
  // be resumed).
  void save_submission(const std::string& run_id, nlohmann::json body, uint64_t seq,
                       std::string status, nlohmann::json record);
  // Hands over the run's record, replacing one not yet written.
  void save_record(const std::string& run_id, uint64_t seq, std::string status,
                   nlohmann::json record);
  // Hands over `cp` for run `run_id`, replacing one not yet written.
  void save_checkpoint(const std::string& run_id, RunCheckpoint cp);
  // Before the run's finished record: writes the run's pending request (on
  // the caller's thread), drops its pending record and checkpoint, and waits
  // for a write of its request or record under way, so that no record of the
  // run is written after this returns.  A checkpoint write under way is not
  // waited for: the writer drops that checkpoint again once it is written
  // (a finished run keeps none).  The request write's status.
  Status settle(const std::string& run_id);
  // Returns once everything handed over before the call is written.
  void flush();

 private:
  struct Record {
    uint64_t seq = 0;
    std::string status;
    nlohmann::json json;
  };
  // What is pending for one run.
  struct Pending {
    std::optional<nlohmann::json> request;
    std::optional<Record> record;
    std::optional<RunCheckpoint> checkpoint;
  };

  void write_loop();
  std::map<std::string, Pending>::iterator next_due(SteadyClock::time_point now,
                                                    SteadyClock::time_point* next);
  SteadyClock::time_point checkpoint_due(const std::string& run_id) const;
  void write(const std::string& run_id, Pending p);

  RunStore* store_;
  const std::chrono::milliseconds checkpoint_every_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Pending> pending_;  // GUARDED_BY(mu_)
  // The run whose writes are under way ("" when none), and whether its
  // request or record is (settle() waits for those, not for a checkpoint).
  std::string writing_run_;             // GUARDED_BY(mu_)
  bool writing_record_ = false;         // GUARDED_BY(mu_)
  bool settled_while_writing_ = false;  // GUARDED_BY(mu_)
  // Runs whose request could not be written: their records are not either.
  std::set<std::string> unrequested_;  // GUARDED_BY(mu_)
  // When each run's last checkpoint write began.
  std::map<std::string, SteadyClock::time_point> checkpoint_written_;  // GUARDED_BY(mu_)
  int flushing_ = 0;                                                   // GUARDED_BY(mu_)
  bool stopping_ = false;                                              // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace lizard
