// RunLoop: the iterations of one attempt of a run, on the workers it was
// loaded on.  Either the server drives them — each iteration's state goes
// out to every worker, their partial aggregates come back and are folded in
// plan order as they arrive (OrderedFold), and the run's IterationStep calls
// the hooks and applies the stop rule — or, for a run on one worker with no
// custom reducer, that worker drives them with the same IterationStep and
// reports each (run_loop_worker.cpp); a worker that cannot gets iterations
// as before.  Each completed iteration goes into the record (timings,
// progress, metrics) and a checkpoint (RunRecovery).
//
//   RunLoop loop(run, ctx, &channel, &recovery);
//   Status st = loop.run(wire_id, participants, loader.fold_tree(), &sections, &it, &done);
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "protocol/iteration_messages.h"
#include "server/ordered_fold.h"
#include "server/run_channel.h"
#include "server/run_fold_tree.h"
#include "server/run_record.h"
#include "server/run_recovery.h"
#include "server/run_sections.h"

namespace lizard {

class RunLoop {
 public:
  // `ctx`, `channel` and `recovery` must outlive it.
  RunLoop(std::shared_ptr<RunRecord> run, const DriverContext& ctx, RunChannel* channel,
          RunRecovery* recovery)
      : run_(std::move(run)), ctx_(ctx), channel_(channel), recovery_(recovery) {}

  // Runs iterations from *it until the step stops the run (*done) or one
  // fails; *it counts those completed.  The record's phases get who drove
  // the loop and, when it ends well, how long it took.
  // With `tree` used, the results come from its senders, each folded with
  // those of the workers below it; a result that says the tree failed
  // fails the attempt with fold_tree_failed() set.
  Status run(const std::string& wire_id, const std::vector<std::string>& participants,
             const RunFoldTree& tree, RunSections* s, int64_t* it, bool* done);
  bool fold_tree_failed() const { return tree_failed_; }

 private:
  // One iteration driven here.
  Status iterate(const std::string& wire_id, const std::vector<std::string>& participants,
                 const RunFoldTree& tree, int64_t it, RunSections* s, bool* done);
  // The run's one worker drives iterations [*it, max) (run_loop_worker.cpp);
  // `unsupported` when it cannot, and nothing ran.
  Status loop_on_worker(const std::string& wire_id, const std::string& worker, int64_t* it,
                        RunSections* s, bool* done, bool* unsupported);
  bool can_loop_on_worker(const std::vector<std::string>& participants) const;
  // The iteration_result of each worker of `from`, each folded into the
  // aggregate (started at its identity) as soon as the results of the
  // workers before it in `from` are (OrderedFold): the fold overlaps the
  // wait for the rest, and its order is always that of `from`.  A result
  // that reports a failure fails the collection.  Allocates nothing once
  // results_ has grown: the frames are kept as they came until folded.
  Status collect_and_fold(const std::string& wire_id, const std::vector<std::string>& from,
                          const RunFoldTree& tree, int64_t it, RunSections* s);
  // How many partial aggregates each participant's iteration_result may
  // carry, from the plan (IterationResultMsg): [least, most] by participant.
  void allow_partials(const std::vector<std::string>& participants);
  // Folds the k-th result (from `worker_id`) into the aggregate.
  Status fold_result(const std::string& worker_id, size_t k, int64_t it, RunSections* s);
  // Records a finished iteration: timings, metrics, progress.
  void record_iteration(IterationTiming timing);
  // The record and checkpoint of the iteration iterate() finished last,
  // kept until the next iteration's frames are sent: building them (the
  // state's fields as JSON, the checkpoint's copies) then overlaps the
  // workers' kernels rather than lying between two iterations.  Done once
  // the next frames are sent, or when the iterations stop.
  void record_finished_iteration(const RunSections& s);
  // The state's scalar fields, for the iteration's timing.
  nlohmann::json state_scalars(const RunSections& s) const;

  std::shared_ptr<RunRecord> run_;
  const DriverContext& ctx_;
  RunChannel* channel_;
  RunRecovery* recovery_;
  struct FinishedIteration {
    bool due = false;
    IterationTiming timing;  // its state left out: read when recorded
    bool done = false;
  } finished_;
  // The iterate frame, shared by the sends to every worker and reused by
  // the next iteration once they are written.
  std::shared_ptr<std::string> iterate_frame_;
  // An iteration's results, by participant (collect_and_fold()): the frames
  // as they came until folded, their payloads (views into them), the
  // slowest kernel time, the time spent folding, and the header last read.
  // Kept, so that folding allocates nothing.
  std::vector<std::string> results_;
  std::vector<std::string_view> payloads_;
  RunChannel::ParticipantIndex participant_index_;           // of indexed_
  std::vector<std::pair<size_t, size_t>> partials_allowed_;  // by participant
  std::vector<std::string> indexed_;
  OrderedFold fold_order_;
  double results_kernel_ms_ = 0;
  double results_fold_ms_ = 0;
  bool results_quick_build_ = false;  // some worker ran the iteration on a quick build
  bool tree_failed_ = false;          // a result said the fold tree failed
  IterationResultMsg result_;
};

}  // namespace lizard
