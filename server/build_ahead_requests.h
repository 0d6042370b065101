// BuildAheadRequests: which workers the server has asked to build which
// variants of queued runs' programs (a build_ahead message; the worker builds
// them in the background, client/ahead_builds.h).  After each scheduling
// pass the coordinator hands it the runs left waiting, in queue order; it
// asks each worker that built a program for the first kPerProgram distinct
// variants of that program's waiting runs, once each, so that a run of new
// specialised values finds its kernels built when its turn comes, and
// withdraws a variant it asked for that no waiting run needs any more (its
// runs were cancelled or have started), so that a worker drops a build not
// begun.  A queue of many new values thus keeps at most kPerProgram builds
// of one program ahead of it.
//
//   BuildAheadRequests ahead;
//   for (auto& [worker, msg] : ahead.update(waiting_runs, cluster)) send(worker, msg);
//   ahead.forget_worker(id);   // when it leaves
//
// Thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "protocol/wire.h"
#include "server/run_record.h"
#include "server/scheduler.h"

namespace lizard {

class BuildAheadRequests {
 public:
  // Distinct variants of one program built ahead at a time.
  static constexpr size_t kPerProgram = 8;

  // The build_ahead messages (requests and withdrawals) due now that
  // `waiting` (in queue order) wait, for each worker of `cluster` that has
  // built their programs.  Programs without specialised params have no
  // variants to build ahead (their one build is made at registration).
  std::vector<std::pair<std::string, Message>> update(
      const std::vector<std::shared_ptr<const RunRecord>>& waiting,
      const std::vector<WorkerView>& cluster);
  void forget_worker(const std::string& id);
  // Whether any worker was asked for a variant not withdrawn yet.
  bool asking();

 private:
  struct Variant {
    std::string hash;
    nlohmann::json params;
  };
  std::mutex mu_;
  // GUARDED_BY(mu_): by worker, the variants asked for, by key.
  std::map<std::string, std::map<std::string, Variant>> asked_;
};

}  // namespace lizard
