#include "client/worker_daemon.h"
#include "client/worker_daemon_impl.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "client/aborted_runs.h"
#include "client/ahead_builds.h"
#include "client/file_probe.h"
#include "client/row_staging.h"
#include "client/run_session.h"
#include "client/session_routes.h"
#include "client/upload_rows.h"
#include "client/worker_connection.h"
#include "common/clock.h"
#include "common/mailbox.h"
#include "common/parallel.h"
#include "exec/process/executor_processes.h"
#include "hooks/idle_hook_processes.h"
#include "program/bundle.h"
#include "protocol/messages.h"

namespace lizard {

using nlohmann::json;

void WorkerDaemon::Impl::handle(std::string frame) {
  auto m = decode_view(frame);
  if (!m.ok()) {
    if (Status st = accept_welcome_frame(frame); st.code() == Code::kPermissionDenied)
      return spdlog::error("{}", st.message());  // the server closes the connection
    spdlog::warn("bad frame from the server: {}", m.status().message());
    return;
  }
  const std::string run_id = wire_run_id_of(*m);
  if (routed_type(m->type)) routes.taken(run_id);  // one that on_frame left to this thread
  switch (m->type) {
    case MessageType::kWelcome: {
      auto w = WelcomeMsg::parse(m->header);
      if (!w.ok()) return spdlog::warn("bad welcome from the server: {}", w.status().message());
      if (Status st = accept_welcome(*w); !st.ok())
        return spdlog::error("{}; trying again", st.message());  // the server closes the connection
      spdlog::info("registered with the server as {}", w->worker_id);
      worker_id = w->worker_id;
      if (shared_builds) shared_builds->set_connected(w->builds);
      if (!w->builds) spdlog::debug("the server keeps no shared builds");
      return;
    }
    case MessageType::kProgram:
    case MessageType::kProgramRemoved:  // after the builds queued before it
      return builds.push(std::move(frame));
    case MessageType::kBuildAhead:
      return build_ahead(m.value());
    case MessageType::kBuildFetched:
      return on_build_fetched(m.value());
    case MessageType::kDataChunk:
      return on_chunk(m.value());
    case MessageType::kRunStart:
      return to_session(run_id, std::move(frame), /*starts=*/true);
    case MessageType::kIterate:
    case MessageType::kLoop:
    case MessageType::kRunEnd:
      return to_session(run_id, std::move(frame), /*starts=*/false);
    case MessageType::kStageRows:
    case MessageType::kDropRows:
      return staging->post(std::move(frame));
    case MessageType::kProbeFile: {  // one open and fstat: answered at once
      auto probe = ProbeFileMsg::parse(m->header);
      if (!probe.ok()) return spdlog::warn("bad probe_file: {}", probe.status().message());
      return send(probe_file(*probe, &data_roots).to_message());
    }
    case MessageType::kRunAbort:  // cancelled, or past its time limit: stop its kernels now
      spdlog::info("run {}: aborted by the server", run_id);
      // A run_start of the run may still be on its way, behind the abort
      // (the first may have found its uploaded rows gone, and a second
      // follows them): it starts nothing.
      aborted.note(run_id);
      chunks.erase(run_id);
      if (auto it = sessions.find(run_id); it != sessions.end()) it->second->abort();
      return;
    default:
      spdlog::debug("ignoring {} message", message_type_name(m->type));
  }
}

// Hands a run's message to its session, starting one for a run_start.
void WorkerDaemon::Impl::to_session(const std::string& run_id, std::string frame, bool starts) {
  auto it = sessions.find(run_id);
  if (starts && aborted.contains(run_id)) {
    spdlog::info("run {}: not started, as the server aborted it already", run_id);
    chunks.erase(run_id);
    return;
  }
  if (starts) {
    if (it != sessions.end()) {  // a repeated start replaces the run
      routes.remove(run_id);
      sessions.erase(it);
    }
    SessionContext ctx;
    ctx.executors = &executors;
    ctx.uploads = uploads.get();
    ctx.data_roots = &data_roots;
    ctx.kept_catalog = &kept_catalog;
    ctx.send = [this](OutgoingFrame f) { conn->send(std::move(f)); };
    ctx.frames = conn->frames();
    ctx.fold_links = fold_links.get();
    ctx.worker_id = worker_id;
    ctx.find_program = [this](const std::string& hash) -> std::shared_ptr<const ProgramImage> {
      std::lock_guard<std::mutex> l(programs_mu);
      auto p = programs.find(hash);
      return p == programs.end() ? nullptr : p->second;
    };
    if (ahead) {
      ctx.needs_compile = [this](const ProgramVariant& v) { return ahead->needs_compile(v); };
      ctx.begins_on_quick_builds = ahead->begins_on_quick_builds();
    }
    if (shared_builds) {
      ctx.fetch_build = [this](const ProgramVariant& v) { return fetch_build(v); };
      ctx.offer_build = [this](const ProgramVariant& v) { offer_build(v); };
    }
    ctx.open_hooks = [this](const ProgramImage& program, const ParamValues& params,
                            const RunValues& values, LoopHookLimits limits) {
      return hooks->open(program, params, values, std::move(limits));
    };
    auto uploaded = std::move(chunks[run_id]);
    chunks.erase(run_id);
    it = sessions.emplace(run_id, std::make_unique<RunSession>(std::move(ctx), std::move(uploaded)))
             .first;
    RunSession* session = it->second.get();
    routes.add(run_id, [session](std::string f) { session->post(std::move(f)); });
  }
  if (it == sessions.end()) {
    if (auto m = decode_view(frame); m.ok() && m->type == MessageType::kIterate) {
      auto h = IterateMsg::parse(m->packed);
      IterationResultMsg r{run_id, h.ok() ? h->iteration : 0, false, "no such run on this worker"};
      send(r.to_message());
    }
    return;
  }
  it->second->post(std::move(frame));
}

// A run's iterate, loop or run_end goes straight to its session when it
// can (session_routes.h); every other frame goes through the daemon's
// thread, which reads its header (this thread reads the first bytes only).
void WorkerDaemon::Impl::on_frame(std::string frame) {
  if (auto type = frame_type(frame); type.ok() && routed_type(*type)) {
    if (auto m = decode_view(frame); m.ok() && routes.deliver(wire_run_id_of(*m), frame)) return;
  }
  inbox.push({InboxItem::kFrame, std::move(frame)});
}

void WorkerDaemon::Impl::reap_sessions() {
  for (auto it = sessions.begin(); it != sessions.end();) {
    if (!it->second->finished()) {
      ++it;
      continue;
    }
    routes.remove(it->first);
    it = sessions.erase(it);
  }
}

void WorkerDaemon::Impl::abort_sessions() {
  for (auto& [id, s] : sessions) {
    routes.remove(id);
    s->abort();
  }
  sessions.clear();
  chunks.clear();
  aborted.clear();
}

void WorkerDaemon::Impl::on_chunk(const MessageView& m) {
  auto h = DataChunkMsg::parse(m.header);
  if (!h.ok() || aborted.contains(h->run_id)) return;
  std::shared_ptr<UploadRows>& rows = chunks[h->run_id][h->field];
  if (!rows) {
    auto made = UploadRows::create(h->total);
    if (!made.ok()) {
      spdlog::warn("run {}: {}", h->run_id, made.status().message());
      return;  // the run finds the field's rows missing, and says so
    }
    rows = std::move(made).value();
  }
  if (Status st = rows->write(h->offset, m.payload.data(), m.payload.size()); !st.ok())
    spdlog::warn("run {}: {}; dropped", h->run_id, st.message());
}

void WorkerDaemon::Impl::on_program_frame(const std::string& frame) {
  auto m = decode_view(frame);
  if (!m.ok()) return;  // handle() decoded it once already
  if (m->type == MessageType::kProgram) return build_program(*m);
  auto removed = ProgramRemovedMsg::parse(m->header);
  if (!removed.ok())
    return spdlog::warn("bad program_removed from the server: {}", removed.status().message());
  hooks->forget(removed->hash);
  // Its executor processes end with it (and the rows they kept for it).
  for (auto& h : executors) {
    if (!h->process) continue;
    std::lock_guard<std::mutex> l(h->mu);
    h->process->forget_owner(OwnerProcessExecutor::owner_of(removed->hash));
  }
  std::lock_guard<std::mutex> l(programs_mu);
  if (programs.erase(removed->hash) > 0)
    spdlog::info("program {} was deleted on the server: forgotten", removed->hash.substr(0, 12));
}

void WorkerDaemon::Impl::build_program(const MessageView& m) {
  // Tests of builds that take long (LIZARD_TEST_BUILD_DELAY_MS).
  if (const char* delay = std::getenv("LIZARD_TEST_BUILD_DELAY_MS"); delay && *delay)
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(delay)));
  auto msg = ProgramMsg::parse(m.header);
  const std::string hash = msg.ok() ? msg->hash : "";
  Status st = msg.status();
  std::shared_ptr<ProgramImage> image;
  if (st.ok()) {
    auto bundle = ProgramBundle::from_json(msg->bundle);
    auto img =
        bundle.ok() ? make_program_image(bundle.value()) : Result<ProgramImage>(bundle.status());
    st = img.status();
    if (st.ok()) image = std::make_shared<ProgramImage>(std::move(img).value());
  }
  if (st.ok() && image->hash != hash) st = internal_error("program checksum mismatch");
  if (st.ok()) {
    const auto t0 = SteadyClock::now();
    // Another worker's build of it, when the server keeps one.
    const ProgramVariant registered = variant_for_build(*image);
    const bool compiles = fetch_build(registered);
    st = first_error(for_each_parallel(executors.size(), [&](size_t i) {
      std::lock_guard<std::mutex> l(executors[i]->mu);
      return executor(i).build(*image);
    }));
    if (st.ok() && compiles) offer_build(registered);
    if (st.ok() && compiles) precompile_runtime_once_needed();
    // Its host hooks too, for the loops this worker drives; without them
    // the server drives this program's runs.
    if (st.ok()) hooks->build(*image);
    if (st.ok()) {
      std::lock_guard<std::mutex> l(programs_mu);
      programs[hash] = image;
    }
    if (st.ok())
      spdlog::info("built program {} ({}) in {:.0f} ms", hash.substr(0, 12), image->manifest.name,
                   ms_since(t0));
  }
  if (!st.ok()) spdlog::warn("program {} did not build: {}", hash.substr(0, 12), st.message());
  send(ProgramStatusMsg{hash, st.ok(), st.message()}.to_message());
}

// The CPU backend's precompiled runtime headers, once this worker has
// compiled its second program: made here, in the background, because the
// executor processes, confined to their programs' builds, may read them but
// not write them.
void WorkerDaemon::Impl::precompile_runtime_once_needed() {
  if (!runtime_compiler || ++programs_compiled != 2) return;
  precompiling =
      std::async(std::launch::async, [c = runtime_compiler] { c->make_precompiled_headers(); });
}

// Queues a build of a queued run's variant; a program not built here yet,
// or params that do not bind, leave it to the run.
void WorkerDaemon::Impl::build_ahead(const MessageView& m) {
  auto msg = BuildAheadMsg::parse(m.header);
  if (!msg.ok() || !ahead) return;
  std::shared_ptr<const ProgramImage> program;
  {
    std::lock_guard<std::mutex> l(programs_mu);
    auto it = programs.find(msg->hash);
    if (it != programs.end()) program = it->second;
  }
  if (!program) return;
  auto params = bind_params(program->manifest, msg->params);
  if (!params.ok()) return;
  if (msg->withdrawn) {
    if (ahead->withdraw(*program, *params))
      spdlog::debug("withdrew the ahead build of {} {}", program->manifest.name,
                    msg->params.dump());
    return;
  }
  ahead->request(std::move(program), *params);
}

void WorkerDaemon::Impl::on_build_fetched(const MessageView& m) {
  auto msg = BuildFetchedMsg::parse(m.header);
  if (!msg.ok()) return spdlog::warn("bad build_fetched: {}", msg.status().message());
  if (shared_builds) shared_builds->on_fetched(*msg, std::string(m.payload));
}

bool WorkerDaemon::Impl::fetch_build(const ProgramVariant& variant) {
  if (!shared_builds) return true;
  if (shared_builds->fetch_missing(variant, BuildTier::kOptimised) != BuildShare::Got::kCompile)
    return false;
  // GPUs that begin runs on a first tier take one from the server when it
  // has one, to begin on while the optimised build compiles.  (The CPU
  // backend's builds have one tier.)
  if (shared_builds->tiered() &&
      shared_builds->fetch_missing(variant, BuildTier::kQuick) == BuildShare::Got::kCompile)
    shared_builds->fetch_missing(variant, BuildTier::kFast);
  return true;
}

void WorkerDaemon::Impl::offer_build(const ProgramVariant& variant) {
  if (!shared_builds) return;
  for (BuildTier tier : {BuildTier::kOptimised, BuildTier::kQuick, BuildTier::kFast})
    shared_builds->offer(variant, tier);
}

WorkerDaemon::WorkerDaemon(WorkerOptions opts) : impl_(new Impl) {
  impl_->opts = std::move(opts);
  IdleHookProcesses::instance().set_capacity(impl_->opts.idle_hook_processes);
  impl_->uploads = std::make_unique<UploadCache>(impl_->opts.upload_cache_mb << 20);
  HookProcessOptions hook_options;
  hook_options.call_timeout_ms = impl_->opts.hook_timeout_s * 1000;
  hook_options.timeout_setting = "--hook-timeout";
  impl_->hooks =
      std::make_unique<WorkerHooks>(impl_->opts.backend.cache_dir + "/hooks",
                                    std::move(hook_options), impl_->opts.backend.compile_timeout_s);
}
WorkerDaemon::~WorkerDaemon() = default;

Status WorkerDaemon::init() {
  LIZARD_ASSIGN_OR_RETURN(impl_->data_roots, DataRoots::make(impl_->opts.data_roots, "worker"));
  if (impl_->opts.executor_processes) {
    LIZARD_ASSIGN_OR_RETURN(auto made,
                            start_executor_processes(impl_->opts.backend, &impl_->backend_note));
    for (auto& e : made) {
      auto owned =
          std::make_unique<OwnerProcessExecutor>(std::move(e), impl_->opts.owner_processes);
      impl_->executors.push_back(std::make_unique<ExecutorHandle>());
      impl_->executors.back()->process = owned.get();
      impl_->executors.back()->executor = std::move(owned);
    }
  } else {
    // Executors in the worker are sent every run's rows: they keep none.
    BackendOptions in_process = impl_->opts.backend;
    in_process.kept_rows_mb = 0;
    in_process.warm_up_compiler = true;
    LIZARD_ASSIGN_OR_RETURN(auto made, make_executors(in_process, &impl_->backend_note));
    for (auto& e : made) {
      impl_->executors.push_back(std::make_unique<ExecutorHandle>());
      impl_->executors.back()->executor = std::move(e);
    }
  }
  if (!impl_->backend_note.empty()) spdlog::warn("{}", impl_->backend_note);
  std::vector<ExecutorInfo> infos;
  for (const auto& e : impl_->executors) infos.push_back(e->executor->info());
  if (impl_->opts.share_builds) {
    Impl* d = impl_.get();
    auto share = BuildShare::make(
        impl_->opts.backend, infos,
        [d](std::string frame) {
          if (d->conn) d->conn->send(std::move(frame));
        },
        std::chrono::milliseconds(impl_->opts.build_fetch_timeout_ms));
    if (share.ok())
      impl_->shared_builds = std::move(share).value();
    else
      spdlog::info("builds are not shared with the server: {}", share.status().message());
  }
  if (auto compiler = VariantCompiler::make(impl_->opts.backend, infos); compiler.ok())
    impl_->runtime_compiler = std::move(compiler).value();
  if (impl_->opts.ahead_builds > 0) {
    auto compiler = VariantCompiler::make(impl_->opts.backend, infos);
    if (compiler.ok())
      impl_->ahead =
          std::make_unique<AheadBuilds>(std::move(compiler).value(), impl_->opts.ahead_builds);
    else
      spdlog::info("no builds ahead of queued runs: {}", compiler.status().message());
    if (impl_->ahead && impl_->shared_builds) {
      Impl* d = impl_.get();
      impl_->ahead->share({[d](const ProgramVariant& v) { return !d->fetch_build(v); },
                           [d](const ProgramVariant& v) { d->offer_build(v); }});
    }
  }
  const WorkerOptions& o = impl_->opts;
  const bool fold_tls = o.tls.enabled;
  if (o.fold_port >= 0 && fold_tls && o.fold_tls_cert.empty()) {
    spdlog::info(
        "no fold links: this worker reaches its server over TLS, and its links to other "
        "workers would too (give --fold-tls-cert and --fold-tls-key); its runs fold at the server");
  } else if (o.fold_port >= 0) {
    // Other workers' results come in over this port only when a token
    // keeps strangers out, as on the server's.
    FoldLinks::Options fo;
    fo.host = o.token.empty() ? "127.0.0.1" : "0.0.0.0";
    fo.port = static_cast<uint16_t>(o.fold_port);
    fo.token = o.token;
    fo.idle_timeout_s = o.server_timeout_s;
    if (fold_tls) {
      fo.tls_cert_file = o.fold_tls_cert;
      fo.tls_key_file = o.fold_tls_key;
      fo.tls = o.tls;
    }
    LIZARD_ASSIGN_OR_RETURN(impl_->fold_links, FoldLinks::start(fo));
    spdlog::info("fold links of other workers on {}:{}{}", fo.host, impl_->fold_links->port(),
                 fold_tls ? " (TLS)" : "");
  }
  for (const auto& e : impl_->executors) {
    const auto& i = e->executor->info();
    spdlog::info("executor: {} {} ({}{} multiprocessors/threads, {:.1f} GiB)", i.kind, i.name,
                 i.arch.empty() ? "" : i.arch + ", ", i.sm_count, i.total_memory / double(1 << 30));
  }
  return Status::Ok();
}

const std::string& WorkerDaemon::refused() const {
  return impl_->refused;
}

bool WorkerDaemon::run() {
  Impl* d = impl_.get();
  UploadRows::remove_stale_files();  // of a worker on this host that was killed
  ConnectionCallbacks callbacks{
      [d] {
        d->inbox.push({Impl::InboxItem::kConnected, {}});
      },
      [d](std::string f) { d->on_frame(std::move(f)); },
      [d] {
        d->inbox.push({Impl::InboxItem::kLost, {}});
      },
      nullptr,  // the server refused the token: see below
  };
  if (!d->opts.retry_refused)
    callbacks.on_refused = [d](std::string why) {
      d->inbox.push({Impl::InboxItem::kRefused, std::move(why)});
    };
  d->conn = std::make_unique<WorkerConnection>(d->opts.host, d->opts.port, d->opts.token,
                                               std::move(callbacks), d->opts.server_timeout_s,
                                               d->opts.tls);
  d->staging = std::make_unique<RowStaging>(
      &d->executors, &d->kept_catalog, d->uploads.get(), &d->data_roots, [d](std::string reply) {
        d->inbox.push({Impl::InboxItem::kStaged, std::move(reply)});
      });
  d->builder = std::thread([d] {
    while (auto frame = d->builds.pop())
      if (!d->builds_stopped) d->on_program_frame(*frame);
  });
  d->conn->start();
  constexpr auto kRefreshPeriod = std::chrono::seconds(3);
  auto next_refresh = SteadyClock::now() + kRefreshPeriod;
  while (!d->stopping) {
    auto item = d->inbox.pop_for(std::max(next_refresh - SteadyClock::now(),
                                          SteadyClock::duration(std::chrono::milliseconds(1))));
    d->reap_sessions();
    if (!item) {  // closed, or time for a measurement
      if (d->stopping) break;
    } else if (item->kind == Impl::InboxItem::kConnected) {
      d->send(d->hello().to_message());
    } else if (item->kind == Impl::InboxItem::kRefused) {  // nothing to serve: stop, failed
      d->refused = item->frame;
      spdlog::error("{}; stopping (lizard client --retry-refused keeps trying)", d->refused);
      break;
    } else if (item->kind == Impl::InboxItem::kLost) {  // drop the runs, keep built programs
      if (d->shared_builds) d->shared_builds->set_connected(false);
      d->abort_sessions();
    } else if (item->kind == Impl::InboxItem::kStaged) {  // the kept rows first, then the answer
      d->refresh_resources();
      if (!item->frame.empty()) d->conn->send(std::move(item->frame));
    } else {
      d->handle(std::move(item->frame));
    }
    if (SteadyClock::now() >= next_refresh) {
      d->refresh_resources();
      next_refresh = SteadyClock::now() + kRefreshPeriod;
    }
    for (const auto& e : d->executors) {
      if (!e->executor->lost()) continue;
      spdlog::error("{} {} is unusable after a kernel fault; restarting the worker",
                    e->executor->info().kind, e->executor->info().name);
      d->abort_sessions();
      d->stop_builder();
      d->staging.reset();
      d->conn->stop();
      return true;
    }
  }
  d->abort_sessions();
  d->stop_builder();
  d->staging.reset();
  d->conn->stop();
  return false;
}

void WorkerDaemon::stop() {
  impl_->stopping = true;
  impl_->inbox.close();
}

}  // namespace lizard
