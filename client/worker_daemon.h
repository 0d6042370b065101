// WorkerDaemon: `lizard client`.  Owns this node's executors (one per GPU, or
// the CPU backend), keeps a connection to the server, builds every program it
// is sent, and serves runs: loads its rows, runs iterations, folds its
// executors' aggregates and answers with one result per iteration.
//
//   WorkerDaemon d(opts);
//   if (Status s = d.init(); !s.ok()) ...;
//   d.run();   // until stop() (from a signal handler thread)
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "client/ahead_builds.h"
#include "common/status.h"
#include "exec/executor_factory.h"
#include "net/tls_options.h"

namespace lizard {

struct WorkerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 5000;
  BackendOptions backend;
  double weight = 0;                // > 0: report this capability weight for every executor
  std::string token;                // presented to the server when it requires one
  int server_timeout_s = 10;        // a server silent this long (not even a ping) counts as gone
  bool retry_refused = false;       // a server that refuses the token: retry (else stop, failed)
  uint64_t upload_cache_mb = 2048;  // uploaded rows kept for later runs (0: none)
  int hook_timeout_s = 60;          // longest host hook call in a loop this worker drives
  size_t idle_hook_processes = 16;  // hook processes kept idle, all programs together
  TlsClientOptions tls;             // wss://: TLS to the server, its certificate verified
  std::vector<std::string> data_roots;  // dataset paths must lie in these (--data-root); empty: any
  // Each executor in a process of its own (exec/process/), so that a kernel
  // that crashes or never ends costs that process, not the worker.
  bool executor_processes = true;
  // Executor processes each executor keeps, one per program whose kernels
  // it runs (exec/process/owner_process_executor.h), beside one spare.
  size_t owner_processes = 8;
  // Variants of queued runs' programs built ahead of their start at once
  // (client/ahead_builds.h); 0: none, each run compiles when it begins.
  int ahead_builds = AheadBuilds::default_threads();
  // Builds are asked of the server before they are compiled, and offered to
  // it once compiled (buildstore/build_share.h); a fetch waits this long at most.
  bool share_builds = true;
  int build_fetch_timeout_ms = 3000;
  // Where the workers below this one in a run's fold tree send it their
  // results (client/fold_links.h): 0, a free port; -1, nowhere (its runs
  // then fold at the server).
  int fold_port = 0;
  // A worker that reaches its server over TLS serves its fold port over TLS
  // too, with this certificate and key, and verifies the other workers'
  // certificates against tls.ca_file; without them it takes no fold links.
  std::string fold_tls_cert, fold_tls_key;
};

class WorkerDaemon {
 public:
  explicit WorkerDaemon(WorkerOptions opts);
  ~WorkerDaemon();
  // Creates the executors; fails when the requested backend is unusable.
  Status init();
  // Connects and serves until stop().  Returns true when the process must
  // restart to use its GPUs again (a kernel fault the driver keeps).
  bool run();
  void stop();
  // Why run() stopped on its own: the server refused this worker's token
  // (and retry_refused was off); empty otherwise.
  const std::string& refused() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lizard
