#include "server/coordinator.h"

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "common/auth.h"
#include "common/clock.h"
#include "common/json_limits.h"
#include "exec/host_compiler.h"
#include "protocol/messages.h"
#include "server/dataset_store.h"
#include "server/http_routes.h"
#include "server/program_registry.h"
#include "server/run_book.h"
#include "server/run_driver.h"
#include "server/scheduler.h"
#include "server/server_metrics.h"
#include "server/worker_registry.h"

namespace lizard {

using nlohmann::json;

namespace {

// What bounds a program's host hooks, in its check and in its runs.
HookProcessOptions hook_options(const CoordinatorOptions& opts) {
  HookProcessOptions h;
  h.call_timeout_ms = opts.hook_timeout_s * 1000;
  h.timeout_setting = "--hook-timeout-s";
  return h;
}

}  // namespace

struct Coordinator::Impl : RouteActions {
  CoordinatorOptions opts;
  HostCompiler compiler;
  ProgramRegistry programs;
  WorkerRegistry workers;
  RunBook runs;
  DatasetStore datasets;
  Scheduler scheduler;
  ServerMetrics metrics{&workers, &runs};
  HttpRoutes routes;
  boost::asio::thread_pool pool{4};
  std::atomic<bool> stopping{false};

  std::mutex drivers_mu;
  std::map<std::string, std::unique_ptr<RunDriver>> drivers;  // GUARDED_BY(drivers_mu)

  // Held while a run of a program is queued and while a program is deleted,
  // so that no run is queued for a program on its way out.
  std::mutex programs_mu;

  SteadyClock::time_point resumed_until;  // set at start, before the scheduling thread

  std::mutex sched_mu;
  std::condition_variable sched_cv;
  bool sched_dirty = false;  // GUARDED_BY(sched_mu)
  std::thread sched_thread;

  explicit Impl(CoordinatorOptions o)
      : opts(std::move(o)),
        compiler((std::filesystem::path(opts.state_dir) / "hooks").string()),
        programs(opts.state_dir, &compiler, hook_options(opts), opts.max_state_bytes),
        runs(opts.state_dir),
        datasets(opts.state_dir),
        scheduler({opts.max_bypass}),
        routes({opts.token, opts.read_token},
               {&programs, &workers, &runs, &datasets, this, &metrics,
                [this](std::function<void()> f) { boost::asio::post(pool, std::move(f)); }}) {}

  // ---- RouteActions --------------------------------------------------------
  void register_program(std::string body, Responder respond) override;
  void register_now(const std::string& body, const Responder& respond);
  void submit_run(const std::string& hash, std::string body, bool wait, Responder respond) override;
  void cancel_run(const std::string& id, Responder respond) override;
  void delete_program(const std::string& hash, Responder respond) override;

  // ---- durability ----------------------------------------------------------
  void resume_runs();
  void prune();

  // ---- workers -------------------------------------------------------------
  void on_frame(const std::string& worker_id, std::string frame);
  void on_hello(const std::string& worker_id, const json& header);
  void to_driver(const std::string& run_id, DriverEvent ev);

  // ---- scheduling ----------------------------------------------------------
  void wake_scheduler();
  void schedule_loop();
  void schedule_once();
  void start_driver(const std::shared_ptr<RunRecord>& run);
  void fail_unservable_waits(const std::vector<PendingRun>& pending,
                             const std::vector<WorkerView>& cluster);
  void reap_drivers();
};

// ---- programs ---------------------------------------------------------------

// Registers the program, pushes it to every worker that lacks it and waits
// until they have built it; a new program that does not build is not kept.
void Coordinator::Impl::register_program(std::string body, Responder respond) {
  boost::asio::post(pool, [this, body = std::move(body), respond = std::move(respond)] {
    answer_guarded(respond, [&](const Responder& respond) { register_now(body, respond); });
  });
}

void Coordinator::Impl::register_now(const std::string& body, const Responder& respond) {
  auto j = parse_json_bounded(body);
  if (!j.ok()) return respond(error_response(j.status()));
  auto prepared = programs.prepare(*j);
  if (!prepared.ok()) return respond(error_response(prepared.status()));
  auto added = programs.add(std::move(prepared).value());
  if (!added.ok()) return respond(error_response(added.status()));
  auto [entry, is_new] = std::move(added).value();
  const std::string hash = entry->image.hash;
  workers.push_program(hash, ProgramMsg{hash, entry->bundle.to_json()}.to_message());
  auto builds = workers.wait_for_builds(
      hash, SteadyClock::now() + std::chrono::seconds(opts.program_build_timeout_s),
      [this] { return stopping.load(); });
  json result = {{"hash", hash}, {"name", entry->image.manifest.name}, {"workers", json::object()}};
  std::string errors;
  for (const auto& [id, b] : builds) {
    result["workers"][id] = b.to_json();
    if (b.state == BuildState::kBuilding)
      errors += "worker " + id + ": still building after " +
                std::to_string(opts.program_build_timeout_s) + " s\n";
    else if (b.state == BuildState::kFailed)
      errors += "worker " + id + ": " + b.error + "\n";
  }
  wake_scheduler();
  if (errors.empty()) return respond(json_response(201, result));
  if (is_new) {
    (void)programs.remove(hash);
    workers.forget_program(hash);
  }
  respond(json_response(422, {{"error", "the program did not build:\n" + errors},
                              {"hash", hash},
                              {"workers", result["workers"]}}));
}

// ---- runs -------------------------------------------------------------------

void Coordinator::Impl::submit_run(const std::string& hash, std::string body, bool wait,
                                   Responder respond) {
  boost::asio::post(
      pool, [this, hash, body = std::move(body), wait, respond = std::move(respond)]() mutable {
        answer_guarded(std::move(respond), [&](Responder respond) {
          auto program = programs.find(hash);
          if (!program) return respond(json_response(404, {{"error", "no such program: " + hash}}));
          auto j = body.empty() ? Result<json>(json::object()) : parse_json_bounded(body);
          if (!j.ok()) return respond(error_response(j.status()));
          RunRequestLimits limits{opts.max_state_bytes, &opts.data_roots};
          auto request = parse_run_request(
              program->image, *j, [this](const std::string& id) { return datasets.lookup(id); },
              limits);
          if (!request.ok()) return respond(error_response(request.status()));
          std::unique_lock<std::mutex> l(programs_mu);
          if (!programs.find(hash))
            return respond(json_response(404, {{"error", "no such program: " + hash}}));
          auto queued = runs.enqueue(program, hash, std::move(request).value(), *j);
          l.unlock();
          if (!queued.ok()) return respond(error_response(queued.status()));
          auto run = std::move(queued).value();
          if (wait)
            runs.add_waiter(run, std::move(respond));
          else
            respond(json_response(202, {{"runtime_id", run->id}, {"status", "queued"}}));
          wake_scheduler();
        });
      });
}

void Coordinator::Impl::cancel_run(const std::string& id, Responder respond) {
  auto outcome = runs.cancel(id);
  if (!outcome.ok()) {
    json body = {{"error", outcome.status().message()}};
    if (auto run = runs.find(id)) body["status"] = runs.get_json(id).value().value("status", "");
    return respond(json_response(http_status(outcome.status()), body));
  }
  const bool cancelled = outcome.value() == RunBook::CancelOutcome::kCancelled;
  if (!cancelled) to_driver(id, DriverEvent{DriverEvent::Kind::kWake, "", {}, {}});
  respond(
      json_response(202, {{"runtime_id", id}, {"status", cancelled ? "cancelled" : "cancelling"}}));
}

// A program no queued or running run uses is forgotten, here and on the workers.
void Coordinator::Impl::delete_program(const std::string& hash, Responder respond) {
  std::unique_lock<std::mutex> l(programs_mu);
  if (!programs.find(hash))
    return respond(json_response(404, {{"error", "no such program: " + hash}}));
  if (runs.has_unfinished_of(hash))
    return respond(json_response(
        409, {{"error", "program " + hash.substr(0, 12) +
                            " has queued or running runs: cancel them (DELETE /runtimes/<id>) "
                            "or let them finish first"}}));
  Status st = programs.remove(hash);
  l.unlock();
  if (!st.ok()) return respond(error_response(st));
  workers.forget_program(hash);
  spdlog::info("deleted program {}", hash.substr(0, 12));
  respond(json_response(200, {{"deleted", hash}}));
}

// ---- durability -------------------------------------------------------------

// The runs a previous server left queued or running: queued ones queue again,
// running ones get a driver that waits for executors and resumes them.
void Coordinator::Impl::resume_runs() {
  auto running = runs.resume([this](const std::string& hash) { return programs.find(hash); },
                             [this](const std::string& id) { return datasets.lookup(id); },
                             opts.resume_wait_s);
  for (const auto& run : running) start_driver(run);
  if (!runs.pending().empty() || !running.empty())
    resumed_until = SteadyClock::now() + std::chrono::seconds(opts.resume_wait_s);
}

// Old finished runs go, and with them the uploads that only they named.
void Coordinator::Impl::prune() {
  for (const std::string& id : runs.prune(opts.keep_runs, opts.keep_days)) {
    Status st = datasets.remove(id);
    if (st.ok())
      spdlog::info("deleted upload {}: no kept run names it", id);
    else if (st.code() != Code::kNotFound)
      spdlog::warn("upload {} not deleted: {}", id, st.message());
  }
}

// ---- workers ----------------------------------------------------------------

void Coordinator::Impl::on_hello(const std::string& worker_id, const json& header) {
  auto hello = HelloMsg::parse(header);
  if (!hello.ok()) {
    spdlog::warn("worker {} sent a bad hello: {}", worker_id, hello.status().message());
    if (auto link = workers.link(worker_id)) link->close();
    return;
  }
  std::vector<std::pair<std::string, std::string>> push;
  for (const auto& p : programs.list())
    push.emplace_back(p->image.hash,
                      encode(ProgramMsg{p->image.hash, p->bundle.to_json()}.to_message()));
  const size_t executors = hello->executors.size();
  const std::string backend = hello->backend;
  if (!workers.hello(worker_id, std::move(hello).value(), push)) return;
  auto link = workers.link(worker_id);
  spdlog::info("worker {} joined from {}: {} executor(s), backend {}", worker_id,
               link ? link->peer() : "?", executors, backend);
  wake_scheduler();
}

void Coordinator::Impl::to_driver(const std::string& run_id, DriverEvent ev) {
  std::lock_guard<std::mutex> l(drivers_mu);
  auto it = drivers.find(run_id);
  if (it != drivers.end()) it->second->deliver(std::move(ev));
}

void Coordinator::Impl::on_frame(const std::string& worker_id, std::string frame) {
  auto m = decode(frame);
  if (!m.ok()) {
    spdlog::warn("worker {} sent a bad frame: {}", worker_id, m.status().message());
    return;
  }
  switch (m->type) {
    case MessageType::kHello:
      return on_hello(worker_id, m->header);
    case MessageType::kProgramStatus:
      if (auto s = ProgramStatusMsg::parse(m->header); s.ok()) {
        metrics.count_program_build(s->ok);
        workers.program_status(worker_id, *s);
      }
      return wake_scheduler();
    case MessageType::kHeartbeat:
      return;
    case MessageType::kProgress:
      if (auto p = ProgressMsg::parse(m->header); p.ok()) runs.progress(worker_id, *p);
      return;
    case MessageType::kResources:
      if (auto r = ResourcesMsg::parse(m->header); r.ok()) workers.resources(worker_id, *r);
      return;
    case MessageType::kRunReady:
    case MessageType::kIterationResult:
    case MessageType::kLoopStep:
    case MessageType::kRunOutputs: {
      const auto id = m->header.find("run_id");
      if (id == m->header.end() || !id->is_string()) return;
      const std::string run_id = run_of_wire_id(id->get<std::string>());
      return to_driver(
          run_id, DriverEvent{DriverEvent::Kind::kMessage, worker_id, std::move(m).value(), {}});
    }
    default:
      spdlog::debug("worker {} sent an unexpected {}", worker_id, message_type_name(m->type));
  }
}

// ---- scheduling -------------------------------------------------------------

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
    schedule_once();
  }
}

void Coordinator::Impl::schedule_once() {
  const std::vector<PendingRun> pending = runs.pending();
  if (pending.empty()) return;
  const std::vector<WorkerView> cluster = workers.view();
  SchedulePass pass = scheduler.schedule(pending, cluster);
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
  fail_unservable_waits(pending, cluster);
}

// A queued run that no connected worker could serve for --worker-wait
// seconds (none has built its program) fails with that reason.
void Coordinator::Impl::fail_unservable_waits(const std::vector<PendingRun>& pending,
                                              const std::vector<WorkerView>& cluster) {
  for (const PendingRun& p : pending) {
    bool servable = false;
    for (const auto& w : cluster)
      servable = servable || w.ready.count(p.program) || w.building.count(p.program);
    if (servable) continue;
    auto run = runs.find(p.id);
    if (!run) continue;
    const bool expired = runs.update(run, [&](RunRecord& r) {
      return r.status == RunStatus::kQueued &&
             SteadyClock::now() - r.queued_since > std::chrono::seconds(opts.worker_wait_s);
    });
    if (expired)
      runs.finish(run, unavailable("no worker has built program " + p.program.substr(0, 12) +
                                   " after " + std::to_string(opts.worker_wait_s) +
                                   " s (GET /clients lists the workers)"));
  }
}

void Coordinator::Impl::start_driver(const std::shared_ptr<RunRecord>& run) {
  DriverContext ctx;
  ctx.book = &runs;
  ctx.workers = &workers;
  ctx.worker_wait_s = opts.worker_wait_s;
  ctx.run_timeout_s = opts.run_timeout_s;
  ctx.worker_loop = opts.worker_loop;
  ctx.hooks = hook_options(opts);
  ctx.metrics = &metrics;
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

// ---- Coordinator ------------------------------------------------------------

Coordinator::Coordinator(CoordinatorOptions opts) {
  std::error_code ec;
  std::filesystem::create_directories(opts.state_dir, ec);
  impl_ = std::make_unique<Impl>(std::move(opts));
  impl_->programs.load_stored();
  impl_->resume_runs();
  impl_->prune();
  impl_->sched_thread = std::thread([this] { impl_->schedule_loop(); });
}

Coordinator::~Coordinator() {
  shutdown();
}

void Coordinator::shutdown() {
  if (impl_->stopping.exchange(true)) return;
  impl_->runs.suspend();  // unfinished runs stay stored as they are, to resume at the next start
  impl_->wake_scheduler();
  impl_->workers.wake();
  if (impl_->sched_thread.joinable()) impl_->sched_thread.join();
  std::map<std::string, std::unique_ptr<RunDriver>> drivers;
  {
    std::lock_guard<std::mutex> l(impl_->drivers_mu);
    drivers.swap(impl_->drivers);
  }
  drivers.clear();  // each sees `stopping` and finishes its run
  impl_->pool.join();
  impl_->runs.fail_queued(
      "the server shut down before the run started (it runs when the server "
      "starts again)");
  // The links belong to the network layer's io context: let them go while it
  // still exists (the hub is stopped, not yet destroyed).
  impl_->workers.clear();
}

void Coordinator::on_http(HttpRequest req, Responder respond) {
  impl_->routes.handle(std::move(req), std::move(respond));
}

std::variant<std::unique_ptr<UploadSink>, HttpResponse> Coordinator::upload_destination(
    const HttpRequest& head) {
  if (auto refusal = impl_->routes.check_token(head)) return *refusal;
  std::string id;
  auto sink = impl_->datasets.open_upload(&id);
  if (!sink.ok()) {
    spdlog::warn("cannot take an upload: {}", sink.status().message());
    return error_response(sink.status());
  }
  return std::move(sink).value();
}

bool Coordinator::authorize_worker(const std::map<std::string, std::string>& headers) {
  if (impl_->opts.token.empty()) return true;
  auto it = headers.find("authorization");
  bool ok =
      it != headers.end() && constant_time_equals(bearer_token(it->second), impl_->opts.token);
  if (!ok) {  // workers retry every few seconds: say it once a minute
    static std::atomic<int64_t> last{0};
    const int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(SteadyClock::now().time_since_epoch())
            .count();
    if (now - last.load() >= 60) {
      last = now;
      spdlog::warn("refused a worker without a valid token");
    }
  }
  return ok;
}

std::string Coordinator::on_worker_connect(std::shared_ptr<WorkerLink> link) {
  std::string id = impl_->workers.connect(impl_->metrics.metered(std::move(link)));
  spdlog::debug("worker {} connected", id);
  return id;
}

void Coordinator::on_worker_frame(const std::string& worker_id, std::string frame) {
  impl_->metrics.count_bytes_from_workers(frame.size());
  impl_->on_frame(worker_id, std::move(frame));
}

void Coordinator::on_worker_close(const std::string& worker_id) {
  auto info = impl_->workers.to_json(worker_id);
  const std::string name =
      info.ok() ? info->value("hardware", json::object()).value("hostname", "") : "";
  impl_->workers.remove(worker_id);
  spdlog::info("worker {} left", worker_id);
  {
    std::lock_guard<std::mutex> l(impl_->drivers_mu);
    for (auto& [_, d] : impl_->drivers)
      d->deliver(DriverEvent{DriverEvent::Kind::kWorkerLost, worker_id, {}, {}, name});
  }
  impl_->wake_scheduler();
}

}  // namespace lizard
