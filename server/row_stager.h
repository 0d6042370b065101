// RowStager: staging and dropping kept rows (exec/kept_rows.h) outside any
// run.  stage() loads a file's rows onto executors before any run, split as
// a run's plan over those executors would split them, so that a run over
// the same file on them finds them kept and reads no file bytes; drop() asks
// every worker to let go of the kept rows of a source.  The executors a
// stage loads onto are claimed like a run's (WorkerRegistry::claim) until
// their workers answer, so no run is placed on them meanwhile.
//
// stage() blocks until the workers answer, or until a deadline as a run's
// loading has (`--load-timeout` plus the rows' bytes at 50 MB/s): a worker
// that misses it is left out of placement until it answers again, as after
// a run's deadline, and the stage fails saying so.  Call it off the io thread.  on_reply() is
// called on the io thread with each worker's rows_staged.  Thread-safe: `mu_` guards the stages in
// flight.
//
//   RowStager stager(&workers, opts.data_roots.roots());
//   Result<nlohmann::json> staged = stager.stage(parse_stage_request(body, roots).value());
//   stager.on_reply(worker_id, rows_staged);   // from the hub
//   size_t told = stager.drop("/data/x.npy");
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "protocol/staging_messages.h"
#include "server/scheduler.h"
#include "server/stage_request.h"

namespace lizard {

class WorkerRegistry;

// How long a worker may take to stage its rows: `floor_s` plus its rows'
// bytes at `bytes_per_s`; a floor of 0 means RowStager::kStageTimeout.
struct StageDeadline {
  double floor_s = 60;
  double bytes_per_s = 50e6;
};

class RowStager {
 public:
  RowStager(WorkerRegistry* workers, std::vector<std::string> data_roots,
            StageDeadline deadline = StageDeadline());

  // Stages the rows; the answer lists what each executor keeps now:
  // {path, format, dtype, width, rows, bytes, executors: [{worker, executor,
  // rows: [begin, end], bytes, was_kept}]}.  kUnavailable when too few
  // executors are free, kTooLarge when the rows do not fit them.
  Result<nlohmann::json> stage(const StageRequest& req);
  void on_reply(const std::string& worker_id, const RowsStagedMsg& m);
  // Tells every joined worker to drop the kept rows of `source`; how many were told.
  size_t drop(const std::string& source);

  static constexpr std::chrono::seconds kStageTimeout{600};

 private:
  // The free executors to stage onto, in the order a run's plan takes them.
  Result<std::vector<ExecutorRef>> pick_executors(int64_t wanted) const;
  // How long a worker may take to stage `bytes` of rows.
  double deadline_s(int64_t bytes) const;
  // Waits for every worker in `waiting` to answer stage `id` (or leave), for
  // at most `seconds`.
  Result<std::map<std::string, RowsStagedMsg>> await(const std::string& id,
                                                     std::vector<std::string> waiting,
                                                     double seconds);

  WorkerRegistry* workers_;
  std::vector<std::string> data_roots_;  // sent to the workers, who open the file within them
  StageDeadline deadline_;
  std::mutex mu_;
  std::condition_variable answered_;
  uint64_t next_id_ = 1;                                                 // GUARDED_BY(mu_)
  std::map<std::string, std::map<std::string, RowsStagedMsg>> replies_;  // GUARDED_BY(mu_)
};

}  // namespace lizard
