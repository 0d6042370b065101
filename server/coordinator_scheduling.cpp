// The coordinator's scheduling thread: places queued runs on free executors
// (scheduler.h decides), starts a run driver for each placed run, fails
// waits no worker can serve, and reaps drivers whose runs have ended.
#include <spdlog/spdlog.h>

#include <set>

#include "server/coordinator_impl.h"

namespace lizard {

namespace {

constexpr const char* kListWorkers = "`lizard workers` or GET /clients lists the workers";

std::string unserved_reason(const std::string& program, bool no_workers) {
  if (no_workers) return "no worker is connected";
  return "no connected worker has built program " + program.substr(0, 12);
}

}  // namespace

void Coordinator::Impl::wake_scheduler() {
  {
    std::lock_guard<std::mutex> l(sched_mu);
    sched_dirty = true;
  }
  sched_cv.notify_one();
}

// Passes run when something changed (a run queued or finished, a worker
// joined or left, a build ended) and every quarter second for the waits.
void Coordinator::Impl::schedule_loop() {
  auto next_prune = SteadyClock::now() + std::chrono::seconds(opts.prune_interval_s);
  while (!stopping) {
    if (SteadyClock::now() >= next_prune) {
      prune();
      next_prune = SteadyClock::now() + std::chrono::seconds(opts.prune_interval_s);
    }
    {
      std::unique_lock<std::mutex> l(sched_mu);
      sched_cv.wait_for(l, std::chrono::milliseconds(250), [&] { return stopping || sched_dirty; });
      sched_dirty = false;
    }
    if (stopping) return;
    reap_drivers();
    close_silent_connections();
    usage.advance(runs.held_by_owner(), SteadyClock::now());
    metrics.set_user_executor_seconds(usage.totals());
    schedule_once();
  }
}

// A connection that upgraded but sent no accepted hello within
// kHelloDeadlineS is closed: it holds a socket and buffers, and no worker
// takes that long to say hello.
void Coordinator::Impl::close_silent_connections() {
  for (const std::string& id : workers.not_joined_after(kHelloDeadlineS)) {
    auto link = workers.link(id);
    if (!link) continue;
    spdlog::warn("closed the connection {} from {}: no hello within {} s", id, link->peer(),
                 kHelloDeadlineS);
    link->close();
  }
}

void Coordinator::Impl::schedule_once() {
  const std::vector<PendingRun> pending = runs.pending();
  if (pending.empty()) {
    // The last waiting runs were cancelled: their builds ahead are withdrawn.
    if (ahead.asking()) request_builds_ahead({}, {}, workers.view());
    return;
  }
  const std::vector<WorkerView> cluster = workers.view();
  SchedulePass pass = scheduler.schedule(pending, cluster, user_shares(pending));
  runs.note_bypassed(pass.bypassed);
  // Just after a restart with runs to resume, the workers are still coming
  // back: nothing is refused yet.
  const bool gathering = SteadyClock::now() < resumed_until;
  for (const Refusal& r : pass.refusals) {
    if (gathering) break;
    auto run = runs.find(r.run_id);
    if (run && runs.update(run, [](RunRecord& x) { return x.status == RunStatus::kQueued; }))
      runs.finish(run, unavailable(r.reason));
  }
  for (const Placement& p : pass.placements) {
    auto run = runs.find(p.run_id);
    if (!run || !workers.claim(p.executors, run->id)) continue;
    const bool recovering = runs.update(run, [](RunRecord& x) { return x.needs_executors; });
    if (!runs.start(run, p.executors)) {
      workers.release(p.executors, run->id);
      continue;
    }
    if (recovering) {
      to_driver(run->id, DriverEvent{DriverEvent::Kind::kPlacement, "", {}, p.executors});
      continue;
    }
    spdlog::info("{} starts on {} executor(s)", run->id, p.executors.size());
    start_driver(run);
  }
  request_builds_ahead(pending, pass, cluster);
  fail_unservable_waits(pending, cluster);
  note_waiting(pass.waiting);
}

std::map<std::string, UserShare> Coordinator::Impl::user_shares(
    const std::vector<PendingRun>& pending) {
  std::map<std::string, UserShare> shares;
  std::shared_ptr<const UserDirectory> users = opts.users ? opts.users->current() : nullptr;
  auto add = [&](const std::string& owner) {
    UserShare& s = shares[owner];
    s.recent_usage = usage.recent(owner);
    if (users)
      if (auto u = users->named(owner)) s.max_executors = u->quota.executors;
  };
  for (const auto& [owner, held] : runs.held_by_owner()) add(owner), shares[owner].held = held;
  for (const PendingRun& p : pending)
    if (!shares.count(p.owner)) add(p.owner);
  return shares;
}

void Coordinator::Impl::note_waiting(const std::map<std::string, std::string>& reasons) {
  for (const auto& [id, why] : reasons)
    if (auto run = runs.find(id))
      runs.update(run, [&](RunRecord& r) {
        if (r.waiting_for.empty()) r.waiting_for = why;
        return false;
      });
}

// The runs left waiting have their kernels built ahead on the workers that
// built their program, each distinct set of specialised values once (at
// most BuildAheadRequests::kPerProgram of a program at a time), so that a
// run finds them built when its turn comes (a map over new values of k);
// builds no waiting run needs any more are withdrawn.
void Coordinator::Impl::request_builds_ahead(const std::vector<PendingRun>& pending,
                                             const SchedulePass& pass,
                                             const std::vector<WorkerView>& cluster) {
  std::set<std::string> left;
  for (const PendingRun& p : pending) left.insert(p.id);
  for (const Placement& p : pass.placements) left.erase(p.run_id);
  for (const Refusal& r : pass.refusals) left.erase(r.run_id);
  std::vector<std::shared_ptr<const RunRecord>> waiting;
  for (const PendingRun& p : pending)
    if (left.count(p.id))
      if (auto run = runs.find(p.id)) waiting.push_back(std::move(run));
  for (auto& [worker_id, msg] : ahead.update(waiting, cluster))
    if (auto link = workers.link(worker_id)) link->send(encode(msg));
}

// A queued run that no connected worker can serve says why in its record at
// once, and fails with that reason after --worker-wait seconds.
void Coordinator::Impl::fail_unservable_waits(const std::vector<PendingRun>& pending,
                                              const std::vector<WorkerView>& cluster) {
  for (const PendingRun& p : pending) {
    bool servable = false;
    for (const auto& w : cluster)
      servable = servable || w.ready.count(p.program) || w.building.count(p.program);
    auto run = runs.find(p.id);
    if (!run) continue;
    const std::string why = servable ? "" : unserved_reason(p.program, cluster.empty());
    const bool expired = runs.update(run, [&](RunRecord& r) {
      r.waiting_for = why;
      return !servable && r.status == RunStatus::kQueued &&
             SteadyClock::now() - r.queued_since > std::chrono::seconds(opts.worker_wait_s);
    });
    if (expired)
      runs.finish(run, unavailable(why + " after " + std::to_string(opts.worker_wait_s) + " s (" +
                                   kListWorkers + ")"));
  }
}

void Coordinator::Impl::start_driver(const std::shared_ptr<RunRecord>& run) {
  DriverContext ctx;
  ctx.book = &runs;
  ctx.workers = &workers;
  ctx.worker_wait_s = opts.worker_wait_s;
  ctx.run_timeout_s = opts.run_timeout_s;
  ctx.load_timeout_s = opts.load_timeout_s;
  ctx.iteration_timeout_s = opts.iteration_timeout_s;
  ctx.fold_fan_in = opts.fold_fan_in;
  ctx.worker_loop = opts.worker_loop;
  ctx.hooks = hook_options(opts);
  ctx.logs = &logs;
  ctx.metrics = &metrics;
  ctx.frames = frames;
  ctx.data_roots = opts.data_roots.roots();
  ctx.stopping = [this] { return stopping.load(); };
  ctx.wake_scheduler = [this] { wake_scheduler(); };
  auto driver = std::make_unique<RunDriver>(run, std::move(ctx));
  RunDriver* d = driver.get();
  {
    std::lock_guard<std::mutex> l(drivers_mu);
    drivers[run->id] = std::move(driver);
  }
  d->start([this](const std::string& id) {
    workers.release_run(id);
    wake_scheduler();
  });
}

void Coordinator::Impl::reap_drivers() {
  std::vector<std::unique_ptr<RunDriver>> done;
  {
    std::lock_guard<std::mutex> l(drivers_mu);
    for (auto it = drivers.begin(); it != drivers.end();) {
      if (it->second->exited()) {
        done.push_back(std::move(it->second));
        it = drivers.erase(it);
      } else {
        ++it;
      }
    }
  }
  // Destroyed outside the lock: each joins its (finished) thread.
}

}  // namespace lizard
