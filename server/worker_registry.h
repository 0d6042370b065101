// WorkerRegistry: the workers connected to the hub — their links, hardware
// reports, the programs each has built (or is building), their executors'
// free memory and load, and which run each executor serves.  It is the membership
// table the scheduler reads and the run drivers send through.
//
// Thread-safe: `mu_` guards every worker entry; `built_` is signalled when a
// program build ends or a worker leaves, for wait_for_builds().
//
//   WorkerRegistry reg;
//   std::string id = reg.connect(link);              // hub: a new connection
//   reg.hello(id, hello);                            // its hardware report
//   reg.claim({{"w1", 0}}, "r7");  ...  reg.release({{"w1", 0}}, "r7");
//   Status st = reg.send("w1", frame);               // kWorkerLost when it left
//   reg.missed_deadline("w1", "missed the run_start deadline (60 s)");  // no runs placed on it
//   reg.answered("w1");                              // ... until it answers again
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "plan/partition_plan.h"
#include "protocol/messages.h"
#include "server/scheduler.h"
#include "server/transport.h"

namespace lizard {

enum class BuildState { kBuilding, kReady, kFailed };

// One executor of a joined worker, as the metrics and the dashboard show it.
struct ExecutorReport {
  std::string worker_id, hostname;
  int index = 0;
  ExecutorInfo info;         // free_memory as last reported
  std::string run;           // the run it serves now, or empty
  uint64_t runs_served = 0;  // runs placed on it since the worker joined
};

// Rows one executor keeps for later runs, as its worker last reported them.
struct KeptRowsReport {
  std::string worker_id;
  int executor = 0;
  bool in_use = false;  // the executor serves a run (or a stage) now
  KeptRowsEntry rows;
};

// {key, description, bytes, and source and rows [begin, end] when known}.
nlohmann::json kept_rows_json(const KeptRowsEntry& k);

struct ProgramBuild {
  BuildState state = BuildState::kBuilding;
  std::string error;
  bool at_join = false;            // sent when the worker joined, not by a registration
  nlohmann::json to_json() const;  // "building", "ready" or {"error": ...}
};

class WorkerRegistry {
 public:
  // A new connection; the worker counts once its hello arrives.  Returns its id.
  std::string connect(std::shared_ptr<WorkerLink> link);
  // Records the hardware report and sends the worker the registered programs
  // (hash, encoded program message), marking them building there, in one
  // step; false when the worker is gone.
  bool hello(const std::string& id, HelloMsg hello,
             const std::vector<std::pair<std::string, std::string>>& programs);
  // Whether the welcome tells workers that the server keeps shared builds.
  void share_builds(bool on) { share_builds_ = on; }
  // Connections that sent no accepted hello within `seconds` of connecting.
  std::vector<std::string> not_joined_after(double seconds) const;
  // Whether the connection's hello was accepted.
  bool joined(const std::string& id) const;
  // Forgets the worker; returns the runs its executors were serving.
  std::vector<std::string> remove(const std::string& id);
  // Drops every link (at shutdown, while the network layer still exists).
  void clear();

  // Sends to one worker; kWorkerLost when it is not connected.
  Status send(const std::string& id, OutgoingFrame frame) const;
  std::shared_ptr<WorkerLink> link(const std::string& id) const;
  // Where each of `ids` takes the fold links of a run's tree: the address it
  // connects from, at the port its hello named; "" for one that takes none.
  std::vector<std::string> fold_addresses(const std::vector<std::string>& ids) const;

  // Sends the program to each joined worker that lacks it (all of them with
  // `only` empty, else that worker alone) and marks it building there.
  void push_program(const std::string& hash, const Message& program, const std::string& only = "");
  void program_status(const std::string& id, const ProgramStatusMsg& m);
  // Forgets that workers have `hash`, and tells those that were sent it
  // (program_removed).
  void forget_program(const std::string& hash);
  // Waits until no joined worker is still building `hash` (or `deadline`,
  // or `stop()` turns true); returns each joined worker's build of it.
  std::map<std::string, ProgramBuild> wait_for_builds(
      const std::string& hash, std::chrono::steady_clock::time_point deadline,
      const std::function<bool()>& stop);
  nlohmann::json builds_of(const std::string& hash) const;  // {worker: state}
  void wake();  // wakes wait_for_builds() to look at `stop` again

  void resources(const std::string& id, const ResourcesMsg& m);

  // A worker that missed a deadline of a run: its executors count as busy
  // for placement until it answers again (answered()); GET /clients shows why.
  void missed_deadline(const std::string& id, const std::string& why);
  // A run's answer came from the worker (cheap when no worker missed a deadline).
  void answered(const std::string& id);
  // A worker sent a message that does not parse or does not fit its run
  // (the run fails): GET /clients shows the latest as `bad_message` until
  // the worker connects again.
  void sent_bad_message(const std::string& id, const std::string& why);

  // Marks executors as serving `run_id`; false (and no change) when one is
  // busy or gone.
  bool claim(const std::vector<ExecutorRef>& executors, const std::string& run_id);
  void release(const std::vector<ExecutorRef>& executors, const std::string& run_id);
  void release_run(const std::string& run_id);  // every executor serving it
  // Plan slots for these executors (weight; max_rows holds free bytes).
  std::vector<ExecutorSlot> slots(const std::vector<ExecutorRef>& executors) const;

  std::vector<WorkerView> view() const;  // for the scheduler
  size_t joined() const;
  std::vector<ExecutorReport> executor_reports() const;
  std::vector<KeptRowsReport> kept_rows() const;  // of every joined worker, in id order
  nlohmann::json to_json() const;                 // GET /clients
  Result<nlohmann::json> to_json(const std::string& id) const;

 private:
  struct Worker {
    std::string id;
    std::shared_ptr<WorkerLink> link;
    bool joined = false;  // hello received
    HelloMsg hello;
    std::map<std::string, ProgramBuild> programs;
    std::vector<std::string> serving;              // per executor: run id, or empty
    std::vector<uint64_t> runs_served;             // per executor
    std::vector<std::vector<KeptRowsEntry>> kept;  // per executor, as last reported
    std::string connected_at;
    std::chrono::steady_clock::time_point connected = std::chrono::steady_clock::now();
    std::string resources_at;  // when its latest resources report arrived
    std::string unresponsive;  // why it is left out of placement, or empty
    std::string bad_message;   // the latest message of it refused, and why; or empty
    nlohmann::json to_json() const;
    std::string fold_address() const;  // ip:fold port, or "" when it takes no fold links
  };

  mutable std::mutex mu_;
  std::condition_variable built_;
  std::map<std::string, Worker> workers_;  // GUARDED_BY(mu_)
  uint64_t next_id_ = 1;                   // GUARDED_BY(mu_)
  std::atomic<int> unresponsive_{0};       // workers with `unresponsive` set
  std::atomic<bool> share_builds_{false};  // said in each welcome
};

}  // namespace lizard
