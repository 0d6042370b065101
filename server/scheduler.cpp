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

double recent_usage(const std::map<std::string, UserShare>& users, const std::string& user) {
  auto it = users.find(user);
  return it == users.end() ? 0.0 : it->second.recent_usage;
}

// Each user's runs reordered by priority (higher first, else in submission
// order) within the places their runs hold in the queue.
void order_by_priority(std::vector<PendingRun>* queue) {
  std::map<std::string, std::vector<size_t>> places;
  for (size_t i = 0; i < queue->size(); ++i)
    if (!(*queue)[i].running) places[(*queue)[i].owner].push_back(i);
  for (const auto& [owner, at] : places) {
    std::vector<PendingRun> theirs;
    for (size_t i : at) theirs.push_back((*queue)[i]);
    std::stable_sort(theirs.begin(), theirs.end(), [](const PendingRun& a, const PendingRun& b) {
      return a.priority > b.priority;
    });
    for (size_t k = 0; k < at.size(); ++k) (*queue)[at[k]] = std::move(theirs[k]);
  }
}

// The queue as a pass takes it: running runs that lost executors first, then
// the queued runs of the user with the least recent usage first, each user's
// by priority, then in submission order (stable sorts).
std::vector<PendingRun> fair_order(std::vector<PendingRun> queue,
                                   const std::map<std::string, UserShare>& users) {
  order_by_priority(&queue);
  std::stable_sort(queue.begin(), queue.end(), [&](const PendingRun& a, const PendingRun& b) {
    if (a.running != b.running) return a.running;
    return recent_usage(users, a.owner) < recent_usage(users, b.owner);
  });
  return queue;
}

// Why `run` waits where another user's run went first for having used less:
// "alice has used more than her share (...)"; empty when it merely waits its
// turn.
std::string share_reason(const PendingRun& run, const std::vector<PendingRun>& queue,
                         const std::map<std::string, UserShare>& users) {
  const double mine = recent_usage(users, run.owner);
  for (const PendingRun& other : queue) {
    if (other.id == run.id) break;  // only those taken before it
    if (other.owner == run.owner || other.running) continue;
    const double theirs = recent_usage(users, other.owner);
    if (theirs < mine) {
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    " has used more than their share (%.0f executor-seconds lately, against "
                    "%.0f for %s)",
                    mine, theirs, other.owner.c_str());
      return run.owner + buf;
    }
  }
  return "";
}

}  // namespace

SchedulePass Scheduler::schedule(const std::vector<PendingRun>& submitted,
                                 const std::vector<WorkerView>& cluster,
                                 const std::map<std::string, UserShare>& users) const {
  SchedulePass pass;
  std::set<ExecutorRef> taken;  // placed in this pass, or held for a starving run
  std::vector<std::string> waiting;
  const std::vector<PendingRun> queue = fair_order(submitted, users);
  std::map<std::string, int64_t> held;  // by user, placements of this pass included
  for (const auto& [user, share] : users) held[user] = share.held;
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
      if (std::string why = share_reason(run, queue, users); !why.empty())
        pass.waiting[run.id] = why;
      continue;
    }
    size_t n = free.size();
    if (run.max > 0) n = std::min<size_t>(n, static_cast<size_t>(run.max));
    const auto share = users.find(run.owner);
    if (share != users.end() && share->second.max_executors > 0) {
      const int64_t left = std::max<int64_t>(0, share->second.max_executors - held[run.owner]);
      if (left < run.min) {
        pass.waiting[run.id] = "user quota of " + std::to_string(share->second.max_executors) +
                               " executors reached (" + run.owner + "'s runs hold " +
                               std::to_string(held[run.owner]) + ")";
        continue;
      }
      n = std::min<size_t>(n, static_cast<size_t>(left));
    }
    held[run.owner] += static_cast<int64_t>(n);
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
