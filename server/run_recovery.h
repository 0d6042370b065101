// RunRecovery: where each attempt of a run begins.  After a server restart,
// a run goes on from its checkpoint (the state and aggregate after its last
// completed iteration) where rows reloaded from their sources are all it
// needs; after a lost worker, the interrupted iteration runs again on the
// executors left.  Where kernels keep per-row values of their own, or a
// worker was lost while the outputs (written into the rows) were gathered,
// the run starts over from its initial state instead, and its record's
// timings go at the first iteration of the new attempt.  Every recovery is
// noted in the record's `recoveries` as it happens: what interrupted the run
// (`kind`: "worker_lost" or "server_restart"), the iteration under way then
// (`lost_at_iteration`), the workers lost, where the next attempt begins
// (`resumed_at_iteration`) and, once it is planned, the workers it runs on
// (`workers`).  After every completed iteration the run's state is
// checkpointed in the run store (save_checkpoint).
//
//   RunRecovery recovery(run, ctx);
//   recovery.begin(&sections, &it, &done);             // before the first attempt
//   recovery.note_plan(participants);                  // each attempt, once loaded
//   recovery.save_checkpoint(it + 1, done, sections);  // after each iteration
//   recovery.after_loss(st, gathering, channel.take_lost_workers(), &sections, &it, &done);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "server/run_channel.h"
#include "server/run_record.h"
#include "server/run_sections.h"

namespace lizard {

class RunRecovery {
 public:
  // `ctx` must outlive it.
  RunRecovery(std::shared_ptr<RunRecord> run, const DriverContext& ctx);

  // Where the first attempt begins: iteration 0, or a restarted server's
  // checkpoint.
  void begin(RunSections* s, int64_t* it, bool* done);
  // Keeps the run's progress, `iterations` completed, so that a restarted
  // server resumes it there (none for a run that starts over anyway).
  void save_checkpoint(int64_t iterations, bool done, const RunSections& s);
  // An attempt lost `lost_workers` (`loss` says why), `gathering` its outputs
  // or not: where the next attempt begins, noted in the record as a
  // recovery of `kind` ("fold_tree_failed": the same workers, with no tree).
  void after_loss(const Status& loss, bool gathering, const std::vector<std::string>& lost_workers,
                  RunSections* s, int64_t* it, bool* done, const char* kind = "worker_lost");
  // The attempt after a recovery was planned over `participants`: the
  // recovery's entry names them.
  void note_plan(const std::vector<std::string>& participants);
  // Why the run last lost a worker ("" when it has not).
  const std::string& last_loss() const { return last_loss_; }
  // True once after an attempt that started over: its first completed
  // iteration replaces the record's timings.
  bool take_restart() {
    const bool pending = restart_pending_;
    restart_pending_ = false;
    return pending;
  }

 private:
  void resume_after_restart(RunSections* s, int64_t* it, bool* done);

  std::shared_ptr<RunRecord> run_;
  const DriverContext& ctx_;
  bool per_row_values_ = false;  // kernels keep per-row values: every recovery starts over
  bool checkpoints_ = false;
  std::string last_loss_;
  bool restart_pending_ = false;
  bool plan_pending_ = false;  // the last recovery's entry waits for its workers
};

}  // namespace lizard
