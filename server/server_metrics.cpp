#include "server/server_metrics.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "common/process_metrics.h"
#include "hooks/idle_hook_processes.h"
#include "server/run_book.h"
#include "server/worker_registry.h"

namespace lizard {

namespace {

// Upper bounds in seconds: iterations take from tens of microseconds
// (loopback, tiny kernels) to minutes.
const std::vector<double> kIterationBounds = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                              0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                              1,      2.5,     5,      10,    30,     60};
const std::vector<double> kCompileBounds = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
// Runs wait and run from milliseconds to days.
const std::vector<double> kRunBounds = {0.01, 0.1, 0.5,  1,    5,     10,    30,   60,
                                        300,  600, 1800, 3600, 10800, 43200, 86400};

// Methods outside the usual few share one label value, so that odd requests
// cannot make new series.
std::string method_label(const std::string& m) {
  static const char* kKnown[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"};
  for (const char* k : kKnown)
    if (m == k) return m;
  return "other";
}

// A link that counts the bytes of each frame, then hands it on.
class MeteredLink : public WorkerLink {
 public:
  MeteredLink(std::shared_ptr<WorkerLink> inner, Counter* sent)
      : inner_(std::move(inner)), sent_(sent) {}
  void send(OutgoingFrame frame) override {
    sent_->add(frame.size());
    inner_->send(std::move(frame));
  }
  size_t queued_bytes() const override { return inner_->queued_bytes(); }
  void close() override { inner_->close(); }
  std::string peer() const override { return inner_->peer(); }
  void set_message_limit(uint64_t bytes) override { inner_->set_message_limit(bytes); }

 private:
  std::shared_ptr<WorkerLink> inner_;
  Counter* sent_;
};

}  // namespace

ServerMetrics::ServerMetrics(const WorkerRegistry* workers, const RunBook* runs)
    : workers_(workers),
      runs_(runs),
      http_(reg_.counter("lizard_http_requests_total",
                         "HTTP requests answered, by method, route template and status code.",
                         {"method", "route", "code"})),
      iteration_(reg_.histogram("lizard_iteration_duration_seconds",
                                "Time per completed iteration as the server measures it: total, "
                                "the slowest executor's kernels, transfer (the rest: state out, "
                                "aggregates back) and fold (with the update hook).",
                                {"part"}, kIterationBounds)),
      iteration_total_(iteration_.with({"total"})),
      iteration_kernel_(iteration_.with({"kernel"})),
      iteration_transfer_(iteration_.with({"transfer"})),
      iteration_fold_(iteration_.with({"fold"})),
      runs_finished_(reg_.counter("lizard_runs_finished_total",
                                  "Runs that ended, by status (done, failed, cancelled).",
                                  {"status"})),
      run_duration_(reg_.histogram("lizard_run_duration_seconds",
                                   "Time from a run's start (placed on executors) to its end, by "
                                   "status; runs cancelled or failed while queued are left out.",
                                   {"status"}, kRunBounds)),
      queue_wait_(reg_.histogram("lizard_run_queue_wait_seconds",
                                 "Time a run waited in the queue before it started, or before "
                                 "it failed or was cancelled there.",
                                 {}, kRunBounds)
                      .with({})),
      compiles_(reg_.counter("lizard_program_compiles_total",
                             "Per-run compiles of a program's kernels (one per worker and run "
                             "whose binaries did not come from a cache).")
                    .with({})),
      compile_cache_hits_(reg_.counter("lizard_program_compile_cache_hits_total",
                                       "Workers whose binaries for a run came from a cache.")
                              .with({})),
      quick_builds_(reg_.counter("lizard_runs_on_quick_builds_total",
                                 "Workers that began a run on a quick build of its kernels "
                                 "while the optimised build compiled.")
                        .with({})),
      compile_duration_(reg_.histogram(
          "lizard_compile_duration_seconds",
          "Time a worker spent compiling a run's kernels, by whether every binary came from a "
          "cache (hit: 0) or not (miss).",
          {"cache"}, kCompileBounds)),
      compile_hit_(compile_duration_.with({"hit"})),
      compile_miss_(compile_duration_.with({"miss"})),
      builds_(reg_.counter("lizard_program_builds_total",
                           "Program builds on workers (after registration, or when a worker "
                           "joins), by result.",
                           {"result"})),
      builds_ok_(builds_.with({"ok"})),
      builds_failed_(builds_.with({"failed"})),
      bytes_to_workers_(reg_.counter("lizard_worker_sent_bytes_total",
                                     "Bytes of frames sent to workers (programs, rows, state).")
                            .with({})),
      bytes_from_workers_(
          reg_.counter("lizard_worker_received_bytes_total",
                       "Bytes of frames received from workers (aggregates, outputs, reports).")
              .with({})) {}

void ServerMetrics::count_http(const std::string& method, const std::string& route, int code) {
  http_.with({method_label(method), route.empty() ? "other" : route, std::to_string(code)}).add();
}

void ServerMetrics::observe_iteration(double total_ms, double kernel_ms, double fold_ms) {
  iteration_total_.observe(total_ms / 1e3);
  iteration_kernel_.observe(kernel_ms / 1e3);
  iteration_transfer_.observe(std::max(0.0, total_ms - kernel_ms - fold_ms) / 1e3);
  iteration_fold_.observe(fold_ms / 1e3);
}

void ServerMetrics::observe_queue_wait(double queued_s) {
  queue_wait_.observe(queued_s);
}

void ServerMetrics::observe_run_finished(const std::string& status, double running_s) {
  runs_finished_.with({status}).add();
  if (running_s > 0) run_duration_.with({status}).observe(running_s);
}

void ServerMetrics::count_run_ready(bool cache_hit, double compile_ms, bool quick_build) {
  if (quick_build) quick_builds_.add();
  (cache_hit ? compile_hit_ : compile_miss_).observe(compile_ms / 1e3);
  if (cache_hit) return compile_cache_hits_.add();
  compiles_.add();
}

void ServerMetrics::count_program_build(bool ok) {
  (ok ? builds_ok_ : builds_failed_).add();
}

std::shared_ptr<WorkerLink> ServerMetrics::metered(std::shared_ptr<WorkerLink> link) {
  return std::make_shared<MeteredLink>(std::move(link), &bytes_to_workers_);
}

void ServerMetrics::set_user_executor_seconds(std::map<std::string, double> totals) {
  std::lock_guard<std::mutex> l(users_mu_);
  user_executor_seconds_ = std::move(totals);
}

std::string ServerMetrics::render() const {
  MetricsWriter w;
  w.family("lizard_build_info", "The server's version.", MetricType::kGauge);
  w.sample("lizard_build_info", {{"version", LIZARD_VERSION}}, 1.0);
  w.family("lizard_hook_processes_idle",
           "Hook processes kept idle for programs' next runs (at most --idle-hook-processes).",
           MetricType::kGauge);
  w.sample("lizard_hook_processes_idle", {},
           static_cast<uint64_t>(IdleHookProcesses::instance().size()));
  collect_workers(w);
  collect_runs(w);
  {
    std::lock_guard<std::mutex> l(users_mu_);
    w.family("lizard_user_executor_seconds_total",
             "Executor-seconds each user's runs have held since the server started.",
             MetricType::kCounter);
    for (const auto& [user, seconds] : user_executor_seconds_)
      w.sample("lizard_user_executor_seconds_total", {{"user", user}}, seconds);
  }
  write_process_metrics(w);
  return reg_.render() + w.text();
}

namespace {

// "node7/gpu1" (a GPU by its ordinal) or "node7/cpu0" (a CPU-backend
// executor by its index): the same after a worker restarts, unlike its join
// id.  Workers sharing a host and device (several daemons on one machine)
// are told apart in join order: "node7/cpu0", "node7/cpu0#2", ...
std::vector<std::string> stable_executor_names(const std::vector<ExecutorReport>& reports) {
  std::vector<size_t> by_join(reports.size());
  for (size_t i = 0; i < by_join.size(); ++i) by_join[i] = i;
  auto join_number = [&](size_t i) { return std::atoll(reports[i].worker_id.c_str() + 1); };
  std::stable_sort(by_join.begin(), by_join.end(),
                   [&](size_t a, size_t b) { return join_number(a) < join_number(b); });
  std::vector<std::string> names(reports.size());
  std::map<std::string, int> seen;
  for (size_t i : by_join) {
    const ExecutorReport& r = reports[i];
    std::string name = r.hostname + "/" +
                       (r.info.kind == "cuda" ? "gpu" + std::to_string(r.info.ordinal)
                                              : "cpu" + std::to_string(r.index));
    int n = ++seen[name];
    names[i] = n == 1 ? name : name + "#" + std::to_string(n);
  }
  return names;
}

}  // namespace

void ServerMetrics::collect_workers(MetricsWriter& w) const {
  if (!workers_) return;
  w.family("lizard_workers_connected", "Workers that have joined (sent their hello).",
           MetricType::kGauge);
  w.sample("lizard_workers_connected", {}, static_cast<uint64_t>(workers_->joined()));
  const std::vector<ExecutorReport> reports = workers_->executor_reports();
  const std::vector<std::string> names = stable_executor_names(reports);
  auto key = [&](const ExecutorReport& r) -> MetricLabels {
    return {{"worker", names[static_cast<size_t>(&r - reports.data())]},
            {"executor", std::to_string(r.index)}};
  };
  w.family("lizard_executor_info",
           "One per executor (a GPU, or a CPU-backend worker): its host, kind and device name.",
           MetricType::kGauge);
  for (const auto& r : reports) {
    MetricLabels l = key(r);
    l.insert(l.end(), {{"host", r.hostname}, {"kind", r.info.kind}, {"name", r.info.name}});
    w.sample("lizard_executor_info", l, 1.0);
  }
  w.family("lizard_executor_memory_total_bytes", "Device memory of the executor.",
           MetricType::kGauge);
  for (const auto& r : reports)
    w.sample("lizard_executor_memory_total_bytes", key(r), r.info.total_memory);
  w.family("lizard_executor_memory_free_bytes",
           "Device memory free on the executor, as its worker last reported it.",
           MetricType::kGauge);
  for (const auto& r : reports)
    w.sample("lizard_executor_memory_free_bytes", key(r), r.info.free_memory);
  w.family("lizard_executor_busy", "1 while the executor serves a run.", MetricType::kGauge);
  for (const auto& r : reports)
    w.sample("lizard_executor_busy", key(r), static_cast<uint64_t>(!r.run.empty()));
  w.family("lizard_executor_runs_served_total",
           "Runs placed on the executor since its worker joined.", MetricType::kCounter);
  for (const auto& r : reports)
    w.sample("lizard_executor_runs_served_total", key(r), r.runs_served);
  w.family("lizard_executor_utilization_ratio",
           "Share of recent time a kernel ran on the GPU (NVML), as its worker last measured it.",
           MetricType::kGauge);
  for (const auto& r : reports)
    if (r.info.utilization >= 0)
      w.sample("lizard_executor_utilization_ratio", key(r), r.info.utilization / 100);
  w.family("lizard_executor_launch_delay_seconds",
           "An empty kernel on the GPU from launch to completion, as its worker last measured it.",
           MetricType::kGauge);
  for (const auto& r : reports)
    if (r.info.launch_delay_us >= 0)
      w.sample("lizard_executor_launch_delay_seconds", key(r), r.info.launch_delay_us / 1e6);
}

void ServerMetrics::collect_runs(MetricsWriter& w) const {
  if (!runs_) return;
  const auto counts = runs_->count_by_status();
  // Runs that ended are counted by lizard_runs_finished_total.
  w.family("lizard_runs", "Runs queued or running now (restored ones included), by status.",
           MetricType::kGauge);
  for (RunStatus s : {RunStatus::kQueued, RunStatus::kRunning}) {
    auto it = counts.find(s);
    w.sample("lizard_runs", {{"status", run_status_name(s)}},
             static_cast<uint64_t>(it == counts.end() ? 0 : it->second));
  }
  w.family("lizard_run_queue_length",
           "Runs waiting for executors: queued ones, and running ones that lost theirs.",
           MetricType::kGauge);
  w.sample("lizard_run_queue_length", {}, static_cast<uint64_t>(runs_->pending().size()));
}

}  // namespace lizard
