#include "server/coordinator.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/auth.h"
#include "common/heap_trim.h"
#include "common/json_limits.h"
#include "hooks/idle_hook_processes.h"
#include "protocol/messages.h"
#include "server/coordinator_impl.h"

namespace lizard {

using nlohmann::json;

namespace {

// Frames from workers at least this large are logged as they arrive (debug),
// for following a run's outputs on their way.
constexpr size_t kLargeFrameBytes = size_t{16} << 20;

// A frame's payload (its tail) as a string of its own: a large one keeps
// the frame's buffer, its head moved out of the way, rather than being
// copied into memory that must first be mapped in.
std::string payload_of(std::string* frame, std::string_view payload) {
  if (payload.size() < kLargeFrameBytes) return std::string(payload);
  frame->erase(0, frame->size() - payload.size());
  return std::move(*frame);
}

// Frees a request's body once it is parsed and answered, and hands a large
// one's parse back to the system (common/heap_trim.h).
void release_body(std::string* body) {
  const bool large = body->size() >= kLargeBodyBytes;
  std::string().swap(*body);
  if (large) return_freed_heap();
}

}  // namespace

// ---- programs ---------------------------------------------------------------

// Registers the program, pushes it to every worker that lacks it and waits
// until they have built it; a new program that does not build is not kept.
// The bundle is checked on the request pool; its host.cpp is compiled and
// loaded on a pool of its own (host_code_pool), so that static initialisers
// that never return hold none of the request pool's threads.
void Coordinator::Impl::register_program(std::string body, const User& caller, Responder respond) {
  if (stopping) return respond(error_response(unavailable("the server is shutting down")));
  boost::asio::post(pool, [this, body = std::move(body), owner = caller.name,
                           respond = std::move(respond)]() mutable {
    answer_guarded(respond, [&](const Responder& respond) { register_now(body, owner, respond); });
    release_body(&body);
  });
}

void Coordinator::Impl::register_now(const std::string& body, const std::string& owner,
                                     const Responder& respond) {
  auto j = parse_json_bounded(body);
  if (!j.ok()) return respond(error_response(j.status()));
  auto checked = programs.check(*j);
  if (!checked.ok()) return respond(error_response(checked.status()));
  std::shared_ptr<ProgramEntry> entry = std::move(checked).value();
  entry->registered_by = owner;
  if (!ProgramRegistry::has_host_code(*entry)) {
    Status st = programs.build_hooks(entry.get());
    if (!st.ok()) return respond(error_response(st));
    return finish_registration(std::move(entry), respond);
  }
  build_host_code(std::move(entry), respond);
}

// The workers build the kernels while this server builds host.cpp: the
// registration waits for the longer of the two, not for both in turn.  A
// host.cpp that does not build leaves no build of a new program behind.
// Whichever comes first answers the registration: a build thread taking it,
// or the deadline of its wait for one (503).
void Coordinator::Impl::build_host_code(std::shared_ptr<ProgramEntry> entry,
                                        const Responder& respond) {
  const std::string hash = entry->image.hash;
  workers.push_program(hash, ProgramMsg{hash, entry->bundle.to_json()}.to_message());
  auto refuse = [this, hash](const Responder& respond, const Status& why) {
    if (!programs.find(hash)) workers.forget_program(hash);
    respond(error_response(why));
  };
  struct SlotWait {
    explicit SlotWait(boost::asio::thread_pool& timers) : deadline(timers) {}
    std::atomic<bool> settled{false};
    boost::asio::steady_timer deadline;
  };
  auto wait = std::make_shared<SlotWait>(slot_deadlines);
  wait->deadline.expires_after(std::chrono::seconds(opts.compile_timeout_s));
  wait->deadline.async_wait([this, wait, respond, refuse](const boost::system::error_code& ec) {
    if (ec || wait->settled.exchange(true)) return;
    answer_guarded(respond, [&](const Responder& respond) {
      refuse(respond, unavailable("the server is busy building other programs' host.cpp: this "
                                  "one waited " +
                                  std::to_string(opts.compile_timeout_s) +
                                  " s (--compile-timeout) for a build slot; try again"));
    });
  });
  boost::asio::post(host_code_pool, [this, entry, wait, respond, refuse] {
    if (wait->settled.exchange(true)) return;  // answered 503 at its deadline
    // On the timer's own thread: a timer is not to be touched from two.
    boost::asio::post(slot_deadlines, [wait] { wait->deadline.cancel(); });
    answer_guarded(respond, [&](const Responder& respond) {
      const Status shutting_down = unavailable("the server is shutting down");
      if (stopping) return refuse(respond, shutting_down);
      Status st = programs.build_hooks(entry.get());
      if (!st.ok()) return refuse(respond, st);
      if (stopping) return refuse(respond, shutting_down);
      boost::asio::post(pool, [this, entry, respond] {
        answer_guarded(respond,
                       [&](const Responder& respond) { finish_registration(entry, respond); });
      });
    });
  });
}

void Coordinator::Impl::finish_registration(std::shared_ptr<ProgramEntry> prepared,
                                            const Responder& respond) {
  auto added = programs.add(std::move(prepared));
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
                                   const User& caller, Responder respond) {
  if (stopping) return respond(error_response(unavailable("the server is shutting down")));
  boost::asio::post(pool, [this, hash, body = std::move(body), wait, caller,
                           respond = std::move(respond)]() mutable {
    answer_guarded(std::move(respond), [&](Responder respond) {
      auto program = programs.find(hash);
      if (!program) return respond(json_response(404, {{"error", "no such program: " + hash}}));
      const int64_t limit = caller.quota.waiting;
      if (limit > 0 && runs.queued_of(caller.name) >= static_cast<size_t>(limit))
        return respond(json_response(
            429, {{"error", "user quota of " + std::to_string(limit) + " waiting runs reached: " +
                                caller.name + " has " + std::to_string(limit) +
                                " runs queued; submit again once some have started"}}));
      auto j = body.empty() ? Result<json>(json::object()) : parse_json_bounded(body);
      if (!j.ok()) return respond(error_response(j.status()));
      if (j->is_object()) (*j)["owner"] = caller.name;  // whatever the body said
      RunRequestLimits limits{opts.max_state_bytes, &opts.data_roots};
      auto request = parse_run_request(program->image, *j, upload_lookup_for(caller), limits);
      if (!request.ok()) return respond(error_response(request.status()));
      (*j)["seed"] = request->spec.run_seed;  // one drawn at random holds after a restart
      std::unique_lock<std::mutex> l(programs_mu);
      if (!programs.find(hash))
        return respond(json_response(404, {{"error", "no such program: " + hash}}));
      auto queued = runs.enqueue(program, hash, std::move(request).value(), std::move(*j), wait);
      l.unlock();
      if (!queued.ok()) return respond(error_response(queued.status()));
      auto run = std::move(queued).value();
      spdlog::debug("{} queued", run->id);
      if (wait)
        runs.add_waiter(run, std::move(respond));
      else
        respond(json_response(202, {{"runtime_id", run->id}, {"status", "queued"}}));
      wake_scheduler();
    });
    release_body(&body);
  });
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
  builds.drop_program(hash);
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
  if (hello->protocol != kWireVersion) return refuse_version(worker_id, hello->protocol);
  std::vector<std::pair<std::string, std::string>> push;
  for (const auto& p : programs.list())
    push.emplace_back(p->image.hash,
                      encode(ProgramMsg{p->image.hash, p->bundle.to_json()}.to_message()));
  const size_t executors = hello->executors.size();
  const std::string backend = hello->backend;
  builds.joined(worker_id, *hello);  // before the programs go: the worker may fetch their builds
  if (!workers.hello(worker_id, std::move(hello).value(), push)) return;
  auto link = workers.link(worker_id);
  if (link) link->set_message_limit(kWorkerMessageBytes);
  spdlog::info("worker {} joined from {}: {} executor(s), backend {}", worker_id,
               link ? link->peer() : "?", executors, backend);
  wake_scheduler();
}

// A run's lines from a worker: kept only for a run the server knows (its id
// names the run's directory) and the worker serves.
void Coordinator::Impl::on_log_chunk(const std::string& worker_id, const json& header) {
  auto chunk = LogChunkMsg::parse(header);
  if (!chunk.ok()) {
    spdlog::warn("worker {} sent a bad log_chunk: {}", worker_id, chunk.status().message());
    return;
  }
  const std::string run_id(run_of_wire_id(chunk->run_id));
  auto run = runs.find(run_id);
  if (!run) return;
  // Only a worker of the run's plan writes into its log (its last lines may
  // come after the run ended and let go of its executors).
  const bool planned = runs.update(run, [&](RunRecord& r) {
    return r.plan && std::any_of(r.plan->entries.begin(), r.plan->entries.end(),
                                 [&](const PlanEntry& e) { return e.worker_id == worker_id; });
  });
  if (!planned) {
    spdlog::warn("worker {} sent output of run {}, which does not run there", worker_id, run_id);
    return;
  }
  logs.add(run->id, worker_id, chunk->lines);
  if (chunk->cut_lines > 0) logs.note_cut(run->id, worker_id, chunk->cut_lines, chunk->cut_bytes);
}

void Coordinator::Impl::refuse_version(const std::string& worker_id, int64_t theirs) {
  auto link = workers.link(worker_id);
  const std::string why = "the worker speaks wire protocol version " + std::to_string(theirs) +
                          ", the server version " + std::to_string(kWireVersion);
  spdlog::warn("refused worker {} from {}: {}", worker_id, link ? link->peer() : "?", why);
  if (!link) return;
  link->send(encode(WelcomeMsg{"", kWireVersion, why}.to_message()));
  link->close();
}

void Coordinator::Impl::to_driver(std::string_view run_id, DriverEvent ev) {
  std::lock_guard<std::mutex> l(drivers_mu);
  auto it = drivers.find(run_id);
  if (it != drivers.end()) it->second->deliver(std::move(ev));
}

void Coordinator::Impl::on_frame(const std::string& worker_id, std::string frame) {
  if (frame.size() >= kLargeFrameBytes)
    spdlog::debug("worker {}: received a frame of {} bytes", worker_id, frame.size());
  auto v = decode_view(frame);
  if (!v.ok()) {
    // A hello of another version: its frame says which.
    if (auto h = decode_handshake(frame); h.ok() && h->type == MessageType::kHello) {
      refuse_version(worker_id, h->version);
      return frames->give(std::move(frame));
    }
    spdlog::warn("worker {} sent a bad frame: {}", worker_id, v.status().message());
    return frames->give(std::move(frame));
  }
  if (v->type == MessageType::kIterationResult) {
    workers.answered(worker_id);
    // The message of every iteration goes to its run's driver as it came:
    // the driver decodes it where it lies and gives its buffer back.
    const std::string_view run_id = run_of_wire_id(packed_run_id(v->packed));
    if (run_id.empty()) return frames->give(std::move(frame));
    return to_driver(run_id, DriverEvent::result(worker_id, std::move(frame)));
  }
  std::string packed(v->packed);  // before the payload takes the frame's buffer
  Message m(v->type, std::move(v->header), payload_of(&frame, v->payload), std::move(packed));
  frames->give(std::move(frame));
  if (m.type != MessageType::kHello && !workers.joined(worker_id)) {
    spdlog::warn("worker {} sent {} before its hello; closing the connection", worker_id,
                 message_type_name(m.type));
    if (auto link = workers.link(worker_id)) link->close();
    return;
  }
  switch (m.type) {
    case MessageType::kHello:
      return on_hello(worker_id, m.header);
    case MessageType::kProgramStatus:
      if (auto s = ProgramStatusMsg::parse(m.header); s.ok()) {
        metrics.count_program_build(s->ok);
        workers.program_status(worker_id, *s);
      }
      return wake_scheduler();
    case MessageType::kHeartbeat:
      return;
    case MessageType::kProgress: {
      auto p = ProgressMsg::parse(m.header);
      if (!p.ok()) return;
      runs.progress(worker_id, *p);
      // A sign of work: the run's driver restarts this worker's deadline.
      const std::string_view run_id = run_of_wire_id(p->run_id);
      return to_driver(run_id,
                       DriverEvent{DriverEvent::Kind::kMessage, worker_id, std::move(m), {}});
    }
    case MessageType::kResources:
      workers.answered(worker_id);  // sent between runs
      if (auto r = ResourcesMsg::parse(m.header); r.ok()) workers.resources(worker_id, *r);
      return;
    case MessageType::kLogChunk:
      return on_log_chunk(worker_id, m.header);
    case MessageType::kBuildOffer: {
      auto offer = BuildOfferMsg::parse(m.header);
      if (!offer.ok())
        return spdlog::warn("worker {} sent a bad build_offer: {}", worker_id,
                            offer.status().message());
      return builds.offer(worker_id, std::move(offer).value(), std::move(m.payload));
    }
    case MessageType::kBuildFetch: {
      auto fetch = BuildFetchMsg::parse(m.header);
      if (!fetch.ok())
        return spdlog::warn("worker {} sent a bad build_fetch: {}", worker_id,
                            fetch.status().message());
      return builds.fetch(worker_id, std::move(fetch).value());
    }
    case MessageType::kRowsStaged:
      workers.answered(worker_id);
      if (auto r = RowsStagedMsg::parse(m.header); r.ok()) stager.on_reply(worker_id, *r);
      return;
    case MessageType::kFileProbed:
      workers.answered(worker_id);
      if (auto r = FileProbedMsg::parse(m.header); r.ok()) visibility.on_reply(worker_id, *r);
      return;
    case MessageType::kRunReady:
    case MessageType::kLoopStep:
    case MessageType::kRunOutputs: {
      workers.answered(worker_id);
      const std::string wire_id = wire_run_id_of(m);
      if (wire_id.empty()) return;
      const std::string_view run_id = run_of_wire_id(wire_id);
      return to_driver(run_id,
                       DriverEvent{DriverEvent::Kind::kMessage, worker_id, std::move(m), {}});
    }
    default:
      spdlog::debug("worker {} sent an unexpected {}", worker_id, message_type_name(m.type));
  }
}

// ---- Coordinator ------------------------------------------------------------

Coordinator::Coordinator(CoordinatorOptions opts) {
  std::error_code ec;
  std::filesystem::create_directories(opts.state_dir, ec);
  IdleHookProcesses::instance().set_capacity(opts.idle_hook_processes);
  impl_ = std::make_unique<Impl>(std::move(opts));
  impl_->workers.share_builds(impl_->opts.build_store_bytes > 0);
  ServerMetrics* metrics = &impl_->metrics;
  impl_->runs.set_events({[metrics](double queued_s) { metrics->observe_queue_wait(queued_s); },
                          [metrics](RunStatus status, double running_s) {
                            metrics->observe_run_finished(run_status_name(status), running_s);
                          },
                          [metrics](double queued_s) { metrics->observe_queue_wait(queued_s); }});
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
  decltype(impl_->drivers) drivers;
  {
    std::lock_guard<std::mutex> l(impl_->drivers_mu);
    drivers.swap(impl_->drivers);
  }
  drivers.clear();               // each sees `stopping` and finishes its run
  impl_->slot_deadlines.stop();  // the registrations still waiting are answered below
  impl_->slot_deadlines.join();
  impl_->pool.join();
  impl_->host_code_pool.join();  // its registrations end at once: the server is stopping
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

std::shared_ptr<FramePool> Coordinator::received_frames() {
  return impl_->frames;
}

void Coordinator::on_worker_frame(const std::string& worker_id, std::string frame) {
  impl_->metrics.count_bytes_from_workers(frame.size());
  impl_->on_frame(worker_id, std::move(frame));
}

void Coordinator::on_worker_close(const std::string& worker_id, const std::string& why) {
  auto info = impl_->workers.to_json(worker_id);
  const std::string name =
      info.ok() ? info->value("hardware", json::object()).value("hostname", "") : "";
  impl_->workers.remove(worker_id);
  impl_->ahead.forget_worker(worker_id);
  impl_->builds.left(worker_id);
  spdlog::info("worker {} left: {}", worker_id, why);
  {
    std::lock_guard<std::mutex> l(impl_->drivers_mu);
    for (auto& [_, d] : impl_->drivers)
      d->deliver(DriverEvent{DriverEvent::Kind::kWorkerLost, worker_id, {}, {}, name, why});
  }
  impl_->wake_scheduler();
}

}  // namespace lizard
