// ServerMetrics: what the head node exposes at GET /metrics, in the
// Prometheus text format.  Events are counted as they happen — HTTP requests
// by route and status, iteration times, run compiles, program builds, bytes
// to and from workers — and the cluster's state (workers and their
// executors, runs by status, the queue) is read from the registries at each
// scrape.  Counting costs a few relaxed atomics; nothing on the iteration
// path locks or allocates.
//
//   ServerMetrics m(&workers, &runs);
//   link = m.metered(std::move(link));         // counts bytes sent to a worker
//   m.observe_iteration(total_ms, kernel_ms, fold_ms);
//   m.observe_queue_wait(queued_s);  m.observe_run_finished("done", running_s);
//   std::string text = m.render();             // GET /metrics
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/metrics.h"
#include "server/transport.h"

namespace lizard {

class RunBook;
class WorkerRegistry;

class ServerMetrics {
 public:
  // The registries are read at each render(); either may be null (left out).
  ServerMetrics(const WorkerRegistry* workers, const RunBook* runs);

  // An answered HTTP request: `route` is the route's template ("/runtimes/{id}"),
  // or "" for a path that matched none.
  void count_http(const std::string& method, const std::string& route, int code);
  // One completed iteration as the server measured it (milliseconds): the
  // whole of it, the slowest executor's kernels, and the fold with the
  // update hook; the rest (state out, aggregates back) counts as transfer.
  void observe_iteration(double total_ms, double kernel_ms, double fold_ms);
  // A worker's run_ready: whether its binaries came from a cache, else how
  // long the compile took, and whether a GPU began on a quick build.
  void count_run_ready(bool cache_hit, double compile_ms, bool quick_build = false);
  // A run that leaves the queue after `queued_s`: it starts running, or it
  // fails or is cancelled there.
  void observe_queue_wait(double queued_s);
  // A run that ends with `status` (done, failed, cancelled) after running
  // `running_s` seconds (0: it never ran here).
  void observe_run_finished(const std::string& status, double running_s);
  // A worker's program_status after POST /programs or its hello.
  void count_program_build(bool ok);
  // Each user's executor-seconds since the server started (UsageLedger's
  // totals), from the scheduling thread.
  void set_user_executor_seconds(std::map<std::string, double> totals);
  // Bytes in frames the workers sent.
  void count_bytes_from_workers(uint64_t n) { bytes_from_workers_.add(n); }

  // Wraps a worker's link so that the bytes of every frame sent through it
  // are counted.
  std::shared_ptr<WorkerLink> metered(std::shared_ptr<WorkerLink> link);

  std::string render() const;

 private:
  void collect_workers(MetricsWriter& w) const;
  void collect_runs(MetricsWriter& w) const;

  const WorkerRegistry* workers_;
  const RunBook* runs_;
  mutable std::mutex users_mu_;
  std::map<std::string, double> user_executor_seconds_;  // GUARDED_BY(users_mu_)
  MetricsRegistry reg_;
  CounterFamily& http_;
  HistogramFamily& iteration_;
  Histogram& iteration_total_;
  Histogram& iteration_kernel_;
  Histogram& iteration_transfer_;
  Histogram& iteration_fold_;
  CounterFamily& runs_finished_;
  HistogramFamily& run_duration_;
  Histogram& queue_wait_;
  Counter& compiles_;
  Counter& compile_cache_hits_;
  Counter& quick_builds_;
  HistogramFamily& compile_duration_;
  Histogram& compile_hit_;
  Histogram& compile_miss_;
  CounterFamily& builds_;
  Counter& builds_ok_;
  Counter& builds_failed_;
  Counter& bytes_to_workers_;
  Counter& bytes_from_workers_;
};

}  // namespace lizard
