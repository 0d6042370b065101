// The worker daemon's account of itself to the server: the hello it joins
// with, and each executor's free memory, load and kept rows, sent when they
// change (WorkerDaemon::Impl, worker_daemon_impl.h).
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "client/worker_daemon_impl.h"
#include "common/parallel.h"

namespace lizard {

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      if (p != std::string::npos) return line.substr(p + 2);
    }
  return "unknown";
}

std::string hostname() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

}  // namespace

HelloMsg WorkerDaemon::Impl::hello() {
  HelloMsg h;
  h.fold_port = fold_links ? fold_links->port() : 0;
  measured.resize(executors.size());
  for (size_t i = 0; i < executors.size(); ++i) {
    std::lock_guard<std::mutex> l(executors[i]->mu);
    if (executors[i]->owner.empty()) measure(i);
    ExecutorInfo info = executor(i).info();
    info.free_memory = measured[i].free_memory;
    info.utilization = measured[i].utilization;
    info.launch_delay_us = measured[i].launch_delay_us;
    if (opts.weight > 0) info.weight = opts.weight;
    h.executors.push_back(info);
  }
  h.hostname = hostname();
  h.version = LIZARD_VERSION;
  h.backend = executors.empty() ? "none" : executor(0).info().kind;
  h.backend_note = backend_note;
  if (shared_builds) h.toolchain = shared_builds->toolchain();
  h.cpu.model = cpu_model();
  h.cpu.threads = std::thread::hardware_concurrency();
  if (const char* job = std::getenv("SLURM_JOB_ID")) h.slurm_job_id = job;
  reported = measured;
  for (auto& r : reported) r.kept.clear();  // reported by the first refresh
  return h;
}

void WorkerDaemon::Impl::measure(size_t i) {
  executor(i).refresh_free_memory();
  executor(i).refresh_load();
  const ExecutorInfo& info = executor(i).info();
  measured[i] = {info.free_memory, info.utilization, info.launch_delay_us, executor(i).kept_rows()};
}

// Measures the free memory and load of every executor that holds no run's
// rows now (a run's own buffers and kernels would count as load), and tells
// the server when any of it moved: free memory by 16 MiB or more (other
// processes on the node allocate and free too, and plans are capped by what
// is free), utilisation by 5 points, the launch delay by a quarter, a
// value came or went, or the rows an executor keeps changed.  Executors busy
// with a run keep their last figures.
void WorkerDaemon::Impl::refresh_resources() {
  constexpr uint64_t kMemoryStep = uint64_t{16} << 20;
  measured.resize(executors.size());
  // Keys noted from here on stay in the catalog, though a measure below
  // read the executor before its run kept them.
  const uint64_t catalog_mark = kept_catalog.generation();
  size_t idle = 0;
  for (size_t i = 0; i < executors.size(); ++i) {
    std::unique_lock<std::mutex> l(executors[i]->mu, std::try_to_lock);
    if (l.owns_lock() && executors[i]->owner.empty()) measure(i), ++idle;
  }
  auto moved = [](double now, double before, double step) {
    if ((now < 0) != (before < 0)) return true;
    return now >= 0 && std::abs(now - before) >= step;
  };
  bool changed = reported.size() != measured.size();
  bool telemetry = false;
  ResourcesMsg r;
  std::set<std::string> kept_now;
  for (size_t i = 0; i < measured.size(); ++i) {
    const Resources& now = measured[i];
    r.free_memory.push_back(now.free_memory);
    r.kept.push_back(kept_catalog.describe(now.kept));
    kept_now.insert(now.kept.begin(), now.kept.end());
    r.utilization.push_back(now.utilization);
    r.launch_delay_us.push_back(now.launch_delay_us);
    telemetry = telemetry || now.utilization >= 0 || now.launch_delay_us >= 0;
    if (changed) continue;
    const Resources& before = reported[i];
    const uint64_t d = now.free_memory > before.free_memory ? now.free_memory - before.free_memory
                                                            : before.free_memory - now.free_memory;
    changed = d >= kMemoryStep || now.kept != before.kept ||
              moved(now.utilization, before.utilization, 5) ||
              moved(now.launch_delay_us, before.launch_delay_us,
                    std::max(5.0, before.launch_delay_us / 4));
  }
  if (idle == executors.size()) kept_catalog.retain(kept_now, catalog_mark);
  if (!changed) return;
  if (!telemetry) r.utilization.clear(), r.launch_delay_us.clear();
  reported = measured;
  send(r.to_message());
}

// Writes a chunk of uploaded rows into its field's memory file, which is
// made once at the size the first chunk announces.
}  // namespace lizard
