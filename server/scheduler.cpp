#include "server/scheduler.h"

#include <algorithm>
#include <cstdio>

namespace lizard {

namespace {

struct Candidate {
  ExecutorRef ref;
  ExecutorLoad load;
  bool holds_rows = false;  // keeps some of the run's rows
};

// Whether `e` keeps rows of one of `run`'s sources.
bool holds_rows_of(const PendingRun& run, const WorkerView::Executor& e) {
  for (const std::string& key : e.kept)
    for (const std::string& source : run.row_sources)
      if (!source.empty() && key.compare(0, source.size(), source) == 0) return true;
  return false;
}

// Whether `e` could ever serve `run`: of the kind it asks for, with enough
// memory in all (or an unknown total).
bool could_serve(const PendingRun& run, const WorkerView::Executor& e) {
  if (run.gpus_only && e.kind != "cuda") return false;
  return e.total_memory == 0 || e.total_memory >= run.min_free_memory;
}

// Whether `e` can serve `run` now, by kind and free memory.
bool can_serve_now(const PendingRun& run, const WorkerView::Executor& e) {
  return could_serve(run, e) && e.free_memory >= run.min_free_memory;
}

std::string gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (uint64_t{1} << 30));
  return buf;
}

// "3 executor(s)", "2 GPU(s) with 8.0 GiB free".
std::string demand_text(const PendingRun& run) {
  std::string t = std::to_string(run.min) + (run.gpus_only ? " GPU(s)" : " executor(s)");
  if (run.min_free_memory > 0) t += " with " + gib(run.min_free_memory) + " free";
  return t;
}

// Why no connected worker can ever serve `run`; empty when some can (or may,
// once a build finishes).
std::string refusal_reason(const PendingRun& run, const std::vector<WorkerView>& cluster) {
  int64_t ready = 0, capable = 0;
  bool building = false;
  std::string errors;
  for (const auto& w : cluster) {
    if (w.ready.count(run.program)) {
      ready += static_cast<int64_t>(w.executors.size());
      for (const auto& e : w.executors) capable += could_serve(run, e);
    }
    building = building || w.building.count(run.program);
    auto f = w.failed.find(run.program);
    if (f != w.failed.end()) errors += "\n  worker " + w.id + ": " + f->second;
  }
  if (building || capable >= run.min || cluster.empty()) return "";
  const std::string prog = "program " + run.program.substr(0, 12);
  if (ready == 0 && !errors.empty())
    return prog + " did not build on any connected worker:" + errors;
  if (ready == 0)
    return "no connected worker has an executor for " + prog +
           " (`lizard workers` or GET /clients lists them)";
  return "the run needs " + demand_text(run) + ", but the workers that built " + prog + " have " +
         std::to_string(capable) + (run.gpus_only || run.min_free_memory ? " such" : "") +
         " between them";
}

}  // namespace

SchedulePass Scheduler::schedule(const std::vector<PendingRun>& queue,
                                 const std::vector<WorkerView>& cluster) const {
  SchedulePass pass;
  std::set<ExecutorRef> taken;  // placed in this pass, or held for a starving run
  std::vector<std::string> waiting;
  for (const PendingRun& run : queue) {
    if (std::string why = refusal_reason(run, cluster); !why.empty()) {
      pass.refusals.push_back({run.id, std::move(why)});
      continue;
    }
    // A run that takes every free executor waits for the builds of a
    // registration still under way, not for those of a worker that joined
    // since: that worker serves later runs once built.
    bool wait_for_builds = false;
    std::vector<Candidate> free;
    for (const auto& w : cluster) {
      if (run.max == 0 && w.building.count(run.program) && !w.joining.count(run.program))
        wait_for_builds = true;
      if (!w.ready.count(run.program)) continue;
      for (size_t i = 0; i < w.executors.size(); ++i) {
        const WorkerView::Executor& e = w.executors[i];
        ExecutorRef ref{w.id, static_cast<int>(i)};
        if (!e.busy && !taken.count(ref) && can_serve_now(run, e))
          free.push_back({ref, e.load(), holds_rows_of(run, e)});
      }
    }
    if (wait_for_builds || static_cast<int64_t>(free.size()) < run.min) {
      if (run.bypassed >= opts_.max_bypass)
        for (const auto& c : free) taken.insert(c.ref);  // held until it can start
      waiting.push_back(run.id);
      continue;
    }
    size_t n = free.size();
    if (run.max > 0) n = std::min<size_t>(n, static_cast<size_t>(run.max));
    // Those that keep the run's rows first, then the least loaded; then
    // grouped by worker for the plan.
    std::stable_sort(free.begin(), free.end(), [](const Candidate& a, const Candidate& b) {
      if (a.holds_rows != b.holds_rows) return a.holds_rows;
      return less_loaded(a.load, b.load);
    });
    free.resize(n);
    Placement p{run.id, {}};
    for (const auto& c : free) {
      p.executors.push_back(c.ref);
      taken.insert(c.ref);
    }
    std::sort(p.executors.begin(), p.executors.end());
    pass.placements.push_back(std::move(p));
    for (const auto& id : waiting)
      if (std::find(pass.bypassed.begin(), pass.bypassed.end(), id) == pass.bypassed.end())
        pass.bypassed.push_back(id);
  }
  return pass;
}

}  // namespace lizard
