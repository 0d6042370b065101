// Coordinator: the head node, wired from its role modules.  It implements the
// network layer's ServerHandler: HTTP requests go to the routes
// (http_routes.h), worker frames to the worker registry (membership, builds,
// resources) or, by run id, to the run's driver (run_driver.h).  A scheduling
// thread places queued runs on disjoint sets of free executors
// (scheduler.h) and starts one driver per placed run, so that many runs
// proceed at once.  At start it resumes the runs a previous server left
// unfinished (run_book.h) and prunes old finished ones (--keep-runs,
// --keep-days).
//
//   Coordinator c({.state_dir = dir});
//   HubServer hub(&c, {...}); hub.start();
//   ...; hub.stop_accepting(); c.shutdown(); hub.stop();
//   // destroy c, then the hub: what c still holds may hold a connection's answer
//
// Threads: HubServer's io thread calls the ServerHandler methods, which never
// block; program registration and run validation go to a small pool; each
// placed run has its driver thread; the scheduling thread places runs.
// Locks: each module guards its own state (see its header); here
// `drivers_mu` guards the map of running drivers and `sched_mu` the flag
// that wakes the scheduling thread.  No lock is held while calling into a
// module.
#pragma once

#include <memory>
#include <string>

#include "dataset/data_roots.h"
#include "server/transport.h"
#include "users/users_file.h"

namespace lizard {

struct CoordinatorOptions {
  std::string state_dir;              // compiled hooks and program bundles live here
  int program_build_timeout_s = 300;  // how long POST /programs waits for workers
  int worker_wait_s = 60;             // how long a run waits for a worker with its program
  double run_timeout_s = 0;           // a run's time limit when its request sets none (0: none)
  int hook_timeout_s = 60;            // longest a host hook call (or loading host.cpp) may take
  int compile_timeout_s = 120;        // longest one compile of a host.cpp may take
  size_t idle_hook_processes = 16;    // hook processes kept idle, all programs together
  // Deadlines for a worker's answers in a run (0: none); a worker that
  // misses one is dropped from the run (DriverContext says how they scale).
  double load_timeout_s = 60;        // run_start, plus the rows' bytes at 50 MB/s
  double iteration_timeout_s = 300;  // an iteration, plus 10x the run's slowest so far
  int fold_fan_in = 16;    // runs on more workers fold along a tree of this fan-in (< 2: never)
  std::string token;       // required of workers and of POST/DELETE requests, when set
  std::string read_token;  // required of GET requests too, when set (the token also works)
  // The users file (--users): each request's token names its user there,
  // and `token` admits workers only; null: the single tokens above.
  std::shared_ptr<UsersFile> users;
  int max_bypass = 16;      // later runs that may start ahead of a waiting one
  bool worker_loop = true;  // a run on one worker: that worker drives its iterations
  uint64_t max_state_bytes = uint64_t{1} << 30;  // state + aggregate of one run (413 beyond)
  DataRoots data_roots;  // where dataset paths in run requests may point (403 elsewhere)
  // A run resumed after a restart waits this long for as many executors as
  // it held (the same plan, so the same answer) before taking fewer.
  int resume_wait_s = 15;
  // Finished runs kept (0: all) and for how long (0: for ever); checked at
  // start and every `prune_interval_s`.
  int64_t keep_runs = 0;
  double keep_days = 0;
  int prune_interval_s = 600;
  // Builds workers offer, kept under STATE_DIR/builds/ for the others
  // (buildstore/build_service.h): at most this many bytes in all.
  uint64_t build_store_bytes = uint64_t{1024} << 20;
};

class Coordinator : public ServerHandler {
 public:
  explicit Coordinator(CoordinatorOptions opts);
  ~Coordinator() override;

  void on_http(HttpRequest req, Responder respond) override;
  bool authorize_worker(const std::map<std::string, std::string>& headers) override;
  std::variant<std::unique_ptr<UploadSink>, HttpResponse> upload_destination(
      const HttpRequest& head) override;
  std::string on_worker_connect(std::shared_ptr<WorkerLink> link) override;
  std::shared_ptr<FramePool> received_frames() override;
  void on_worker_frame(const std::string& worker_id, std::string frame) override;
  void on_worker_close(const std::string& worker_id, const std::string& why) override;

  // Stops the scheduler, the drivers and the pool, fails queued runs and lets
  // the worker links go; requests that come later are answered at once.
  // Call it after the network layer stops accepting, and destroy the
  // coordinator before the network layer.
  void shutdown();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lizard
