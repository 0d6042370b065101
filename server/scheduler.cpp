#include "server/scheduler.h"

#include <algorithm>

namespace lizard {

namespace {

struct Candidate {
  ExecutorRef ref;
  double weight = 1;
};

// Why no connected worker can ever serve `run`; empty when some can (or may,
// once a build finishes).
std::string refusal_reason(const PendingRun& run, const std::vector<WorkerView>& cluster) {
  int64_t capable = 0;
  bool building = false;
  std::string errors;
  for (const auto& w : cluster) {
    if (w.ready.count(run.program)) capable += static_cast<int64_t>(w.executors.size());
    building = building || w.building.count(run.program);
    auto f = w.failed.find(run.program);
    if (f != w.failed.end()) errors += "\n  worker " + w.id + ": " + f->second;
  }
  if (building || capable >= run.min || cluster.empty()) return "";
  const std::string prog = "program " + run.program.substr(0, 12);
  if (capable == 0 && !errors.empty())
    return prog + " did not build on any connected worker:" + errors;
  if (capable == 0)
    return "no connected worker has an executor for " + prog + " (GET /clients lists them)";
  return "the run needs " + std::to_string(run.min) + " executor(s), but the workers that built " +
         prog + " have " + std::to_string(capable) + " between them";
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
    // A run that takes every free executor waits for builds still under way.
    bool wait_for_builds = false;
    std::vector<Candidate> free;
    for (const auto& w : cluster) {
      if (run.max == 0 && w.building.count(run.program)) wait_for_builds = true;
      if (!w.ready.count(run.program)) continue;
      for (size_t i = 0; i < w.executors.size(); ++i) {
        ExecutorRef ref{w.id, static_cast<int>(i)};
        if (!w.executors[i].busy && !taken.count(ref)) free.push_back({ref, w.executors[i].weight});
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
    // The strongest executors first; then grouped by worker for the plan.
    std::stable_sort(free.begin(), free.end(),
                     [](const Candidate& a, const Candidate& b) { return a.weight > b.weight; });
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
