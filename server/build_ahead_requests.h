// BuildAheadRequests: which workers the server has asked to build which
// variants of queued runs' programs (a build_ahead message; the worker builds
// them in the background, client/ahead_builds.h), so that each worker is
// asked once per variant.  After each scheduling pass the coordinator asks it
// about the runs left waiting, so that a run of new specialised values finds
// its kernels built when its turn comes.
//
//   BuildAheadRequests ahead;
//   for (auto& [worker, msg] : ahead.due(*run, cluster)) send(worker, msg);
//   ahead.forget_worker(id);   // when it leaves
//
// Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "protocol/wire.h"
#include "server/run_record.h"
#include "server/scheduler.h"

namespace lizard {

class BuildAheadRequests {
 public:
  // The build_ahead messages a queued `run` calls for: one for each worker
  // of `cluster` that has built its program and was not asked for the run's
  // variant yet; none when the program has no specialised params (its one
  // build is made when it is registered).
  std::vector<std::pair<std::string, Message>> due(const RunRecord& run,
                                                   const std::vector<WorkerView>& cluster);
  void forget_worker(const std::string& id);

 private:
  std::mutex mu_;
  std::map<std::string, std::set<std::string>> asked_;  // GUARDED_BY(mu_): by worker, variant keys
};

}  // namespace lizard
