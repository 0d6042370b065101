// RunLoader: the loading of one attempt of a run.  It waits until the run
// holds executors (asking the scheduler for others when it lost all of its
// own), plans the run's rows over them (within their free memory), and
// loads every worker's rows, each on a thread of its own so that uploaded
// rows stream to all of them at once: uploaded rows are first offered from
// the workers' caches of earlier runs, and sent to the workers that no
// longer hold them.  The record gets the plan and the loading phases.
//
//   RunLoader loader(run, ctx, &channel);
//   LIZARD_RETURN_IF_ERROR(loader.wait_for_placement(recovery.last_loss()));
//   Result<std::vector<std::string>> participants = loader.load(wire_id, /*fold_tree=*/true);
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "plan/partition_plan.h"
#include "protocol/messages.h"
#include "server/run_channel.h"
#include "server/run_fold_tree.h"
#include "server/run_record.h"

namespace lizard {

class RunLoader {
 public:
  // `ctx` and `channel` must outlive it.
  RunLoader(std::shared_ptr<RunRecord> run, const DriverContext& ctx, RunChannel* channel)
      : run_(std::move(run)), ctx_(ctx), channel_(channel) {}

  // Returns once the run holds executors: at once, or after asking the
  // scheduler for others.  `last_loss`: why it lost its own, for the error
  // when none come.
  Status wait_for_placement(const std::string& last_loss);
  // Plans the rows over the run's executors and loads every worker of
  // attempt `wire_id`; the workers that hold rows, in plan order.  With
  // `fold_tree`, they fold their results along a tree when the run is large
  // enough (server/run_fold_tree.h); fold_tree_failed() says whether its
  // loading failed because a worker could not reach the one above it.
  Result<std::vector<std::string>> load(const std::string& wire_id, bool fold_tree);
  // The attempt's fold tree, as load() planned it.
  const RunFoldTree& fold_tree() const { return tree_; }
  bool fold_tree_failed() const { return tree_failed_; }

 private:
  Status limit_rows_to_memory(std::vector<ExecutorSlot>* slots) const;
  void drop_kept_rows(const std::vector<std::string>& workers) const;
  // Each worker's run_ready; one that does not parse fails the loading.
  Result<std::map<std::string, RunReadyMsg>> load_workers(
      const std::string& wire_id,
      const std::map<std::string, std::vector<const PlanEntry*>>& by_worker,
      const std::vector<std::string>& which, bool stream_uploads);
  Status start_worker(const std::string& wire_id, const std::string& worker_id,
                      const std::vector<const PlanEntry*>& entries, bool stream_uploads);

  std::shared_ptr<RunRecord> run_;
  const DriverContext& ctx_;
  RunChannel* channel_;
  RunFoldTree tree_ = RunFoldTree::plan({}, {}, 0, 0);
  bool tree_failed_ = false;
};

}  // namespace lizard
