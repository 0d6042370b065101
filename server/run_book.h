// RunBook: the server's runs — their records, the queue of runs waiting for
// executors, cancel requests, progress, and their persistence in the run
// store (so that finished runs and their fields survive a restart).
//
// Thread-safe: `mu_` guards the map, the queue and every record's mutable
// fields; a driver changes its record only through update().  Waiters
// (POST ...?wait=1) are answered outside the lock.
//
//   RunBook book(state_dir);
//   auto run = book.submit(program, hash, std::move(request));
//   for (const PendingRun& p : book.pending()) ...;        // for the scheduler
//   book.start(run, executors);  ...  book.finish(run, status);
#pragma once

#include <nlohmann/json.hpp>

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "protocol/messages.h"
#include "server/run_record.h"
#include "server/run_store.h"

namespace lizard {

class RunBook {
 public:
  // Opens the run store in `state_dir` (records then survive a restart) and
  // restores the runs kept there; runs that were unfinished are failed.
  explicit RunBook(const std::string& state_dir);

  std::shared_ptr<RunRecord> submit(std::shared_ptr<const ProgramEntry> program,
                                    const std::string& hash, RunRequest request);
  // Answers `respond` with the run's record when it finishes (at once if it has).
  void add_waiter(const std::shared_ptr<RunRecord>& run, Responder respond);
  std::shared_ptr<RunRecord> find(const std::string& id) const;

  // What waits for executors, in order: runs that lost theirs first, then the queue.
  std::vector<PendingRun> pending() const;
  void note_bypassed(const std::vector<std::string>& ids);
  // A queued run (or one that lost its executors) now holds `executors`.
  // False when it was cancelled meanwhile.
  bool start(const std::shared_ptr<RunRecord>& run, const std::vector<ExecutorRef>& executors);
  // Changes a record under the lock.
  template <typename F>
  auto update(const std::shared_ptr<RunRecord>& run, F f) {
    std::lock_guard<std::mutex> l(mu_);
    return f(*run);
  }
  void persist(const std::shared_ptr<RunRecord>& run);

  enum class CancelOutcome { kCancelled, kCancelling };
  // kNotFound, or kConflict when the run has finished.
  Result<CancelOutcome> cancel(const std::string& id);
  // Ends the run: status from `st`, record and fields stored, waiters answered.
  void finish(const std::shared_ptr<RunRecord>& run, const Status& st);
  // Fails every queued run (at shutdown).
  void fail_queued(const std::string& reason);

  void progress(const std::string& worker_id, const ProgressMsg& m);

  // GET /runtimes (optionally one status) and GET /runtimes/<id>.
  Result<nlohmann::json> list_json(const std::string& status) const;
  Result<nlohmann::json> get_json(const std::string& id) const;
  // A finished run's field as .npy bytes.
  Result<std::string> field_npy(const std::string& id, const std::string& name) const;
  std::map<RunStatus, int64_t> count_by_status() const;

 private:
  void persist_locked(const RunRecord& run, const nlohmann::json& record);
  void restore(const std::string& state_dir);

  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<RunRecord>> runs_;  // GUARDED_BY(mu_)
  std::deque<std::shared_ptr<RunRecord>> queue_;            // GUARDED_BY(mu_)
  uint64_t next_seq_ = 1;                                   // GUARDED_BY(mu_)
  std::unique_ptr<RunStore> store_;  // null: records do not survive a restart
};

}  // namespace lizard
