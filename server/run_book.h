// RunBook: the server's runs — their records, the queue of runs waiting for
// executors, cancel requests, progress, and their persistence in the run
// store: finished runs and their fields survive a restart, and so do queued
// and running ones (their requests and per-iteration checkpoints are kept;
// resume() brings them back once the programs are loaded), until prune()
// lets old finished ones go.
//
// A finished run's fields, once stored, are read from the store; the newest
// runs' stay in memory too, up to kHeldOutputBytes in all, for the download
// that follows a run at once (a client's ?wait=1 and then its fields), so
// that records kept for days hold no field bytes.
//
// Thread-safe: `mu_` guards the map, the queue and every record's mutable
// fields; a driver changes its record only through update().  Waiters
// (POST ...?wait=1) are answered outside the lock.
//
//   RunBook book(state_dir);
//   auto run = book.enqueue(program, hash, std::move(request), body);   // kept: survives restarts
//   for (auto& r : book.resume(find_program, uploads, 15)) ...start a driver for r...
//   for (const PendingRun& p : book.pending()) ...;        // for the scheduler
//   book.start(run, executors);  ...  book.finish(run, status);
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "protocol/messages.h"
#include "server/run_record.h"
#include "server/run_store.h"
#include "server/run_store_writer.h"
#include "users/user_directory.h"

namespace lizard {

// The ids of uploaded datasets ({"upload": id}) a run request body names.
std::vector<std::string> uploads_named(const nlohmann::json& body);

class RunBook {
 public:
  // What the newest finished runs' stored fields may hold in memory.
  static constexpr uint64_t kHeldOutputBytes = uint64_t{512} << 20;

  // Opens the run store in `state_dir` (records then survive a restart) and
  // restores the runs kept there.  Unfinished runs whose request was kept
  // wait for resume(); others (stored by an older server) are failed.
  // Stored fields beyond `held_output_bytes` are read from the store only.
  explicit RunBook(const std::string& state_dir, uint64_t held_output_bytes = kHeldOutputBytes);

  // Queues a run and keeps its request `body` (as sent) in the run store, so
  // that it survives a restart.  A run whose submitter is answered at once
  // (202) is stored before this returns, and nothing is queued when the store
  // cannot take it (kStorageFull for a full disk).  One whose submitter is
  // answered only when it ends (`answered_when_done`, ?wait=1) is stored in
  // the background (run_store_writer.h), off the run's path; it is refused
  // only when the store is known to take nothing (its state directory gone).
  Result<std::shared_ptr<RunRecord>> enqueue(std::shared_ptr<const ProgramEntry> program,
                                             const std::string& hash, RunRequest request,
                                             nlohmann::json body, bool answered_when_done = false);
  // Queues a run whose request is not kept (it fails at a restart).
  std::shared_ptr<RunRecord> submit(std::shared_ptr<const ProgramEntry> program,
                                    const std::string& hash, RunRequest request);

  // Brings back the runs that were unfinished when the server stopped:
  // queued ones queue again (in their order); running ones are returned, to
  // be given a driver each — they wait for executors, as many as they held
  // for up to `resume_wait_s`, and resume from their checkpoint.  A run whose
  // program is gone or whose request no longer holds (a deleted upload)
  // fails with the reason.
  using ProgramLookup = std::function<std::shared_ptr<const ProgramEntry>(const std::string& hash)>;
  std::vector<std::shared_ptr<RunRecord>> resume(const ProgramLookup& programs,
                                                 const UploadLookup& uploads, int resume_wait_s);
  // Keeps the run's progress after a completed iteration: written to the
  // store by a thread of its own (run_store_writer.h), so the run does not
  // wait for it.  A failure is logged: the run goes on, resumable from an
  // earlier point.
  void checkpoint(const std::shared_ptr<RunRecord>& run, RunCheckpoint cp);
  // Returns once every record, request and checkpoint handed over to the
  // store's writer before the call is written.
  void flush_writes();
  // From now on runs that end leave their stored records as they are, so
  // that a server shutting down leaves them to resume at its next start.
  void suspend();
  // Forgets finished runs beyond the newest `keep_runs` (0: no limit) or
  // finished more than `keep_days` days ago (0: no limit), with their fields.
  // Returns the uploads that they named and that no remaining run names.
  std::vector<std::string> prune(int64_t keep_runs, double keep_days);
  // True when a queued or running run uses program `hash`.
  bool has_unfinished_of(const std::string& hash) const;
  // Answers `respond` with the run's record when it finishes (at once if it
  // has: then 0).  Returns a token for take_waiter.
  uint64_t add_waiter(const std::shared_ptr<RunRecord>& run, Responder respond);
  // The waiter `token` of add_waiter, taken back unanswered; null once the
  // run's end has answered it.
  Responder take_waiter(const std::shared_ptr<RunRecord>& run, uint64_t token);
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
  // Hands the run's record, as it is now, to the store's writer (unless the
  // run is finishing: its finished record is stored by finish()).
  void persist(const std::shared_ptr<RunRecord>& run);

  enum class CancelOutcome { kCancelled, kCancelling };
  // kNotFound, or kConflict when the run has finished.
  Result<CancelOutcome> cancel(const std::string& id);
  // Ends the run: status from `st`, record and fields stored, waiters
  // answered.  The run shows its final status only once its record is
  // stored; a run whose result cannot be stored ends failed with the reason.
  void finish(const std::shared_ptr<RunRecord>& run, const Status& st);
  // Fails every queued run (at shutdown).
  void fail_queued(const std::string& reason);

  // A worker's rows done in the current iteration, or (m.compiling) that it
  // compiles the running run's kernels: its record then says so.
  void progress(const std::string& worker_id, const ProgressMsg& m);

  // Told of each run as it starts (the seconds it was queued) and as it
  // finishes (its status, and the seconds it ran: 0 when it never did, or
  // when it started before a restart).  Set before runs are submitted;
  // called outside the book's lock.
  struct Events {
    std::function<void(double queued_s)> started;
    std::function<void(RunStatus status, double running_s)> finished;
    // A run that ended (failed, cancelled) while queued, after `queued_s`.
    std::function<void(double queued_s)> ended_queued;
  };
  void set_events(Events events) { events_ = std::move(events); }

  // GET /runtimes (every run, or those of one status: a status given empty
  // names none, and is refused) and GET /runtimes/<id>.
  Result<nlohmann::json> list_json(const std::optional<std::string>& status = std::nullopt) const;
  Result<nlohmann::json> get_json(const std::string& id) const;
  // Who submitted run `id` ("" for a run from before owners were kept), and
  // whom its data is shared with.
  Result<Ownership> access_of(const std::string& id) const;
  // The executors each user's running runs hold now; the runs `owner` has queued.
  std::map<std::string, int64_t> held_by_owner() const;
  size_t queued_of(const std::string& owner) const;
  // A finished run's field as .npy bytes: its header, and its bytes where
  // the record holds them (kept alive by `owner`), or the whole file read
  // back from the run store in `head`.
  struct FieldDownload {
    std::string head;
    std::string_view tail;
    std::shared_ptr<const void> owner;
  };
  Result<FieldDownload> field_download(const std::string& id, const std::string& name) const;
  // The same, joined.
  Result<std::string> field_npy(const std::string& id, const std::string& name) const;
  std::map<RunStatus, int64_t> count_by_status() const;
  // Ok while the run store's state directory and database are in place (or
  // when there is no store); otherwise why not.
  Status store_health() const;

 private:
  RunStatus store_finished(const std::shared_ptr<RunRecord>& run, RunStatus status);
  // The run's fields are stored: kept in memory among the newest, and the
  // oldest held ones dropped beyond kHeldOutputBytes.
  void hold_stored_outputs_locked(const std::shared_ptr<RunRecord>& run);
  void persist_locked(const RunRecord& run, const nlohmann::json& record);
  void persist_later_locked(const RunRecord& run);
  void restore(const std::string& state_dir);
  std::shared_ptr<RunRecord> resume_one(const StoredRun& s, const ProgramLookup& programs,
                                        const UploadLookup& uploads, int resume_wait_s,
                                        Status* failure);

  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<RunRecord>> runs_;  // GUARDED_BY(mu_)
  std::deque<std::shared_ptr<RunRecord>> queue_;            // GUARDED_BY(mu_)
  uint64_t next_seq_ = 1;                                   // GUARDED_BY(mu_)
  std::vector<StoredRun> to_resume_;                        // GUARDED_BY(mu_)
  bool suspended_ = false;                                  // GUARDED_BY(mu_)
  uint64_t next_waiter_ = 1;                                // GUARDED_BY(mu_)
  // Stored runs whose fields are still in memory too, oldest first.
  std::deque<std::shared_ptr<RunRecord>> held_outputs_;  // GUARDED_BY(mu_)
  uint64_t held_output_bytes_ = 0;                       // GUARDED_BY(mu_)
  const uint64_t max_held_output_bytes_;
  std::unique_ptr<RunStore> store_;  // null: records do not survive a restart
  // Declared after store_: stopped, with what is pending written, before it.
  std::unique_ptr<RunStoreWriter> writer_;
  Events events_;
};

}  // namespace lizard
