// Scheduler: the placement policy for queued runs, a pure function of the
// queue and the cluster's executors (no sockets, no threads, no clocks), so
// that it is tested on its own.
//
// Each run asks for between `min` and `max` executors (max 0: every free
// one), optionally GPUs only and each with at least `min_free_memory` bytes
// free.  A pass walks the queue in submission order and places each run on a
// set of free executors of workers that have built its program, disjoint from
// every other run's: those that keep some of its rows first (a later run over
// the same file or upload), then the least loaded (plan/executor_load.h).  A run that cannot start
// yet does not block the ones behind it (backfill), but each pass that places a later run while it
// waits counts as a bypass; once a run has been bypassed `max_bypass` times, the executors it could
// use are held for it, so it cannot starve.  A run that the connected workers can never serve (too
// few executors with its program, or a program no worker could build, or no GPU or no executor with
// enough memory among them) is refused with the reason.
//
// With several users (`users`), a pass takes the queued runs of the user
// who has used the cluster least lately first (their recent executor-seconds,
// server/usage_ledger.h), each user's in submission order: a second user's
// run starts before the first user's queue drains.  A user's quota caps the
// executors their runs hold at once.  A run left waiting for either reason
// says so (SchedulePass::waiting).
//
//   Scheduler s({.max_bypass = 16});
//   SchedulePass p = s.schedule(queue, cluster);
//   for (const Placement& pl : p.placements) start(pl.run_id, pl.executors);
//   for (const std::string& id : p.bypassed) ++bypasses[id];
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "plan/executor_load.h"

namespace lizard {

// One executor of one worker.
struct ExecutorRef {
  std::string worker_id;
  int index = 0;
  bool operator<(const ExecutorRef& o) const {
    return worker_id != o.worker_id ? worker_id < o.worker_id : index < o.index;
  }
  bool operator==(const ExecutorRef& o) const {
    return worker_id == o.worker_id && index == o.index;
  }
};

// A worker as the scheduler sees it.
struct WorkerView {
  std::string id;
  struct Executor {
    double weight = 1;
    bool busy = false;          // serving a run
    std::string kind;           // "cuda" or "cpu"
    uint64_t total_memory = 0;  // bytes; 0: unknown
    uint64_t free_memory = 0;   // bytes, as last reported
    double utilization = -1;    // percent; < 0: unknown
    double launch_delay_us = -1;
    std::vector<std::string> kept{};  // keys of the input rows it keeps (exec/kept_rows.h)
    ExecutorLoad load() const { return {weight, free_memory, utilization, launch_delay_us}; }
  };
  std::vector<Executor> executors;
  std::set<std::string> ready;     // programs built on every executor
  std::set<std::string> building;  // programs being built
  // Those of `building` it builds since it joined: no run waits for them.
  std::set<std::string> joining;
  std::map<std::string, std::string> failed;  // programs that did not build: their error
};

// A queued run, in submission order.
struct PendingRun {
  std::string id;
  std::string program;
  int64_t min = 1;
  int64_t max = 0;  // 0: every free executor
  int bypassed = 0;
  bool gpus_only = false;        // only executors of kind "cuda"
  uint64_t min_free_memory = 0;  // bytes each executor must have free
  // Where its rows come from, as the start of the keys executors keep them
  // under (an upload's id and ":", a file's identity): executors that keep
  // some of them are preferred.
  std::vector<std::string> row_sources{};
  std::string owner{};   // who submitted it (users/user_directory.h)
  bool running = false;  // a running run that lost executors: first, whoever's it is
  int64_t priority = 0;  // among its owner's runs, higher first
};

// A user as the scheduler weighs them.
struct UserShare {
  double recent_usage = 0;    // executor-seconds lately (usage_ledger.h)
  int64_t held = 0;           // executors their runs hold now
  int64_t max_executors = 0;  // their quota; 0: none
};

struct Placement {
  std::string run_id;
  std::vector<ExecutorRef> executors;  // grouped by worker, in index order
};

struct Refusal {
  std::string run_id;
  std::string reason;
};

struct SchedulePass {
  std::vector<Placement> placements;
  std::vector<Refusal> refusals;
  std::vector<std::string> bypassed;  // waiting runs a later run was placed ahead of
  // Why a run waits, where it is its user's quota or share rather than its
  // turn: "user quota of 4 executors reached", "alice has used more than her share".
  std::map<std::string, std::string> waiting;
};

struct SchedulerOptions {
  int max_bypass = 16;
};

class Scheduler {
 public:
  explicit Scheduler(SchedulerOptions opts = {}) : opts_(opts) {}
  SchedulePass schedule(const std::vector<PendingRun>& queue,
                        const std::vector<WorkerView>& cluster,
                        const std::map<std::string, UserShare>& users = {}) const;

 private:
  SchedulerOptions opts_;
};

}  // namespace lizard
