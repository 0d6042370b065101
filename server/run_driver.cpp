#include "server/run_driver.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <future>

#include "common/clock.h"
#include "dataset/json_values.h"
#include "program/reducers.h"
#include "protocol/messages.h"
#include "server/row_streamer.h"
#include "server/server_metrics.h"

namespace lizard {

using nlohmann::json;

namespace {

// A section's fields as JSON arrays and scalars.
json section_to_json(const SectionBuffer& s, const Manifest& m, const ParamValues& p,
                     bool scalars_only = false) {
  json out = json::object();
  for (const auto& slot : s.slots) {
    if (scalars_only && slot.count != 1) continue;
    auto dims = field_dims(*slot.spec, m, p);
    out[slot.spec->name] = values_to_json(
        s.data(slot), slot.spec->type, dims.ok() ? dims.value() : std::vector<int64_t>{slot.count});
  }
  return out;
}

}  // namespace

RunDriver::RunDriver(std::shared_ptr<RunRecord> run, DriverContext ctx)
    : run_(std::move(run)), ctx_(std::move(ctx)) {}

RunDriver::~RunDriver() {
  inbox_.close();
  join();
}

void RunDriver::join() {
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

// The executors go back before the record is finished, so that whoever
// learns of the end (a waiting POST, GET /clients) finds them free.
void RunDriver::start(std::function<void(const std::string&)> release) {
  started_ = SteadyClock::now();
  time_limit_s_ = run_->request.timeout_s > 0 ? run_->request.timeout_s : ctx_.run_timeout_s;
  thread_ = std::thread([this, release = std::move(release)] {
    const auto t0 = started_;
    Status st;
    try {  // the run fails; the server stays up
      st = drive();
    } catch (const std::bad_alloc&) {
      st = too_large("the server ran out of memory for this run");
    } catch (const std::exception& e) {
      st = internal_error(std::string("internal error: ") + e.what());
    }
    ctx_.book->update(run_, [&](RunRecord& r) { r.elapsed_ms = ms_since(t0); });
    spdlog::debug("{}: the driver ends after {:.3f} ms", run_->id, ms_since(t0));
    release(run_->id);
    ctx_.book->finish(run_, st);
    exited_ = true;
  });
}

Status RunDriver::interrupted() {
  if (ctx_.stopping()) return unavailable("the server is shutting down");
  if (ctx_.book->update(run_, [](RunRecord& r) { return r.cancel_requested; })) {
    abort_ = true;
    return Status(Code::kCancelled, "cancelled");
  }
  if (time_limit_s_ > 0 && ms_since(started_) > time_limit_s_ * 1000) {
    abort_ = true;
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", time_limit_s_);
    return runtime_error(std::string("the run ran past its time limit of ") + limit + " s");
  }
  return Status::Ok();
}

Status RunDriver::drive() {
  const ProgramEntry& prog = *run_->program;
  const Manifest& m = prog.image.manifest;
  const RunRequest& req = run_->request;
  Sections s;
  LIZARD_ASSIGN_OR_RETURN(s.state, make_section(m.state, m, req.params));
  LIZARD_ASSIGN_OR_RETURN(s.agg, make_section(m.aggregate, m, req.params));
  LIZARD_ASSIGN_OR_RETURN(s.partial, make_section(m.aggregate, m, req.params));
  // A cancel or shutdown ends a hook that is running.
  HookProcessOptions hook_options = ctx_.hooks;
  hook_options.interrupted = [this] { return interrupted(); };
  LIZARD_ASSIGN_OR_RETURN(
      s.hooks, prog.hooks->start(m, req.params, s.state, s.agg, std::move(hook_options)));
  if (req.state)
    s.state.bytes = req.state->bytes;
  else
    LIZARD_RETURN_IF_ERROR(s.hooks->init_state(&s.state).status());
  s.initial_state = s.state;
  return run_attempts(&s);
}

// Each attempt plans the rows over the executors the run holds; when a
// worker is lost, its rows go to the others so that the result is the one an
// undisturbed run gives.  Rows are reloaded from their sources, so where
// kernels keep per-row values of their own the run starts over from the
// initial state; otherwise the interrupted iteration runs again.  A worker
// lost while the outputs are gathered takes its rows' outputs with it: the
// run starts over, since outputs are what kernels wrote into the rows.
Status RunDriver::run_attempts(Sections* s) {
  const Manifest& m = run_->program->image.manifest;
  const RunRequest& req = run_->request;
  constexpr int kMaxAttempts = 20;
  bool per_row_values = false;
  for (const auto& f : m.dataset) per_row_values = per_row_values || !f.input;
  int64_t it = 0;
  bool done = false;
  checkpoints_ = !per_row_values;  // a run with per-row values starts over anyway
  if (run_->restarted) resume_after_restart(per_row_values, s, &it, &done);
  for (int attempt = 0;; ++attempt) {
    const std::string wire_id = run_->id + "." + std::to_string(attempt);
    std::vector<std::string> participants;
    Status st = wait_for_placement();
    if (st.ok()) {
      // `compiling` is set while it loads when a worker says it compiles.
      auto started = start_partitions(wire_id);
      ctx_.book->update(run_, [](RunRecord& r) { r.compiling = nullptr; });
      st = started.status();
      if (st.ok()) participants = std::move(started).value();
      if (st.ok()) ctx_.book->persist(run_);  // its executors: a restart waits for as many
    }
    bool loop_there = st.ok() && can_loop_on_worker(participants);
    if (st.ok())
      ctx_.book->update(run_, [&](RunRecord& r) { r.phases["worker_loop"] = loop_there; });
    const auto t_iter = SteadyClock::now();
    while (st.ok() && it < req.max_iterations && !done) {
      if (loop_there) {
        bool unsupported = false;
        st = loop_on_worker(wire_id, participants[0], &it, s, &done, &unsupported);
        loop_there = !unsupported;
        if (unsupported)
          ctx_.book->update(run_, [&](RunRecord& r) { r.phases["worker_loop"] = false; });
        continue;
      }
      st = iterate(wire_id, participants, it, s, &done);
      if (st.ok()) ++it;
    }
    record_finished_iteration(*s);
    bool gathering = false;
    if (st.ok()) {
      ctx_.book->update(run_, [&](RunRecord& r) { r.phases["iterations_ms"] = ms_since(t_iter); });
      gathering = true;
      st = gather_outputs(wire_id, participants, *s);  // ends the run on the workers
      if (st.ok()) return st;
    } else {
      end_on_workers(wire_id, participants, false);
    }
    if (st.code() != Code::kWorkerLost || attempt + 1 >= kMaxAttempts) return st;
    last_loss_ = st.message();
    const bool start_over = per_row_values || gathering;
    if (start_over) {
      s->state = s->initial_state;
      it = 0;
      done = false;
    }
    spdlog::warn("{}: {}; re-planning and resuming at iteration {}", run_->id, st.message(), it);
    // `iterations` keeps counting what completed until the next attempt
    // completes one of its own (a run that fails now says how far it got).
    ctx_.book->update(run_, [&](RunRecord& r) {
      r.recoveries.push_back({{"resumed_at_iteration", it},
                              {"iterations_completed", r.iterations},
                              {"reason", st.message()}});
    });
    restart_pending_ = restart_pending_ || start_over;
  }
}

// Drops the executors of a lost worker from those the run holds.
void RunDriver::drop_executors_of(const std::string& worker_id) {
  ctx_.book->update(run_, [&](RunRecord& r) {
    r.executors.erase(
        std::remove_if(r.executors.begin(), r.executors.end(),
                       [&](const ExecutorRef& e) { return e.worker_id == worker_id; }),
        r.executors.end());
  });
}

// Returns once the run holds executors: at once, or after asking the
// scheduler for others when it lost all of its own.
Status RunDriver::wait_for_placement() {
  const bool have = ctx_.book->update(run_, [](RunRecord& r) {
    if (r.executors.empty()) r.needs_executors = true;
    return !r.executors.empty();
  });
  if (have) return Status::Ok();
  ctx_.wake_scheduler();
  const auto deadline = SteadyClock::now() + std::chrono::seconds(ctx_.worker_wait_s);
  while (SteadyClock::now() < deadline) {
    LIZARD_RETURN_IF_ERROR(interrupted());
    auto ev = inbox_.pop_for(std::chrono::milliseconds(200));
    if (ev && ev->kind == DriverEvent::Kind::kPlacement) return Status::Ok();
  }
  ctx_.book->update(run_, [](RunRecord& r) { r.needs_executors = false; });
  if (!last_loss_.empty())
    return unavailable(last_loss_ + "; no other worker that has built program " +
                       run_->hash.substr(0, 12) + " became free within " +
                       std::to_string(ctx_.worker_wait_s) + " s (GET /clients lists the workers)");
  return unavailable("no worker has built program " + run_->hash.substr(0, 12) + " after " +
                     std::to_string(ctx_.worker_wait_s) + " s (GET /clients lists the workers)");
}

Result<std::optional<DriverEvent>> RunDriver::next_event_from(const std::vector<std::string>& from,
                                                              const ParticipantIndex* index) {
  LIZARD_RETURN_IF_ERROR(interrupted());
  auto ev = inbox_.pop_for(std::chrono::milliseconds(200));
  if (!ev) return std::optional<DriverEvent>();
  const bool of_from = index ? index->count(ev->worker_id) > 0
                             : std::find(from.begin(), from.end(), ev->worker_id) != from.end();
  if (!of_from) return std::optional<DriverEvent>();
  if (ev->kind == DriverEvent::Kind::kWorkerLost) {
    drop_executors_of(ev->worker_id);
    const bool heartbeat = ev->reason.rfind("missed heartbeat", 0) == 0;
    deadline_.seconds = 0;
    return worker_lost("lost worker " + ev->worker_id +
                       (ev->worker_name.empty() ? "" : " (" + ev->worker_name + ")") +
                       ": it left during the run (" +
                       (ev->reason.empty() ? "its connection closed" : ev->reason) +
                       (heartbeat ? ")" : "; the worker's log says why)"));
  }
  if (ev->kind == DriverEvent::Kind::kMessage && ev->msg.type == MessageType::kProgress) {
    heard_from(ev->worker_id);  // at work: its deadline counts from now
    return std::optional<DriverEvent>();
  }
  return ev;
}

Result<std::map<std::string, Message>> RunDriver::collect(const std::string& wire_id,
                                                          MessageType type,
                                                          const std::vector<std::string>& from,
                                                          bool keep_failures) {
  std::map<std::string, Message> got;
  while (got.size() < from.size()) {
    LIZARD_RETURN_IF_ERROR(
        check_deadlines(wire_id, from, [&](size_t k) { return got.count(from[k]) > 0; }));
    LIZARD_ASSIGN_OR_RETURN(std::optional<DriverEvent> ev, next_event_from(from));
    if (!ev || ev->kind != DriverEvent::Kind::kMessage || ev->msg.type != type) continue;
    if (wire_run_id_of(ev->msg) != wire_id) continue;  // an earlier attempt's
    if (!keep_failures)
      if (auto error = reported_error(ev->msg))
        return runtime_error("worker " + ev->worker_id + ": " + *error);
    got[ev->worker_id] = std::move(ev->msg);
  }
  return got;
}

Status RunDriver::collect_and_fold(const std::string& wire_id, const std::vector<std::string>& from,
                                   int64_t it, Sections* s) {
  results_.resize(from.size());
  payloads_.resize(from.size());
  if (indexed_ != from) {  // the same participants as a rule: built once
    indexed_ = from;
    participant_index_.clear();
    for (size_t k = 0; k < from.size(); ++k) participant_index_.emplace(from[k], k);
  }
  fold_order_.start(from.size());
  results_kernel_ms_ = 0;
  results_fold_ms_ = 0;
  set_identity(&s->agg);
  auto fold = [&](size_t k) { return fold_result(from[k], k, it, s); };
  // A failed collection names the iteration; a failed fold says it itself.
  const auto at = [it](Status st) { return st.with_context("iteration " + std::to_string(it)); };
  while (!fold_order_.done()) {
    if (Status st =
            check_deadlines(wire_id, from, [&](size_t k) { return fold_order_.has_arrived(k); });
        !st.ok())
      return at(st);
    auto next = next_event_from(from, &participant_index_);
    if (!next.ok()) return at(next.status());
    std::optional<DriverEvent>& ev = *next;
    if (!ev || ev->kind != DriverEvent::Kind::kResult) continue;
    const size_t k = participant_index_.at(ev->worker_id);
    if (fold_order_.has_arrived(k)) continue;
    auto view = decode_view(ev->frame);
    if (!view.ok() || view->type != MessageType::kIterationResult ||
        packed_run_id(view->packed) != wire_id)
      continue;  // an earlier attempt's
    const std::string& id = ev->worker_id;
    if (Status st = result_.read(view->packed); !st.ok())
      return at(st.with_context("worker " + id));
    if (!result_.ok)
      return at(runtime_error("worker " + id + ": " +
                              (result_.error.empty() ? std::string("failed") : result_.error)));
    results_kernel_ms_ = std::max(results_kernel_ms_, result_.kernel_ms);
    // The payload stays where it lies: moving the frame keeps its buffer.
    payloads_[k] = view->payload;
    results_[k] = std::move(ev->frame);
    LIZARD_RETURN_IF_ERROR(fold_order_.arrived(k, fold));
  }
  return Status::Ok();
}

Status RunDriver::fold_result(const std::string& worker_id, size_t k, int64_t it, Sections* s) {
  const auto t0 = SteadyClock::now();
  const std::string_view payload = payloads_[k];
  const size_t n = s->partial.bytes.size();
  if (n != 0 && payload.size() % n != 0)
    return internal_error("worker " + worker_id + " sent an aggregate of " +
                          std::to_string(payload.size()) + " bytes; expected a multiple of " +
                          std::to_string(n));
  const bool custom = run_->program->image.manifest.has_custom_reducer();
  for (size_t off = 0; n != 0 && off < payload.size(); off += n) {
    std::memcpy(s->partial.bytes.data(), payload.data() + off, n);
    fold_into(&s->agg, s->partial);
    if (custom) LIZARD_RETURN_IF_ERROR(s->hooks->aggregate(&s->agg, s->partial, it));
  }
  payloads_[k] = {};
  if (ctx_.frames)  // for the hub to read the next results into
    ctx_.frames->give(std::move(results_[k]));
  results_fold_ms_ += ms_since(t0);
  return Status::Ok();
}

Status RunDriver::iterate(const std::string& wire_id, const std::vector<std::string>& participants,
                          int64_t it, Sections* s, bool* done) {
  const auto t0 = SteadyClock::now();
  // One frame for every worker, sent from where it lies; its buffer is
  // reused once the previous iteration's sends let it go.
  if (!iterate_frame_ || iterate_frame_.use_count() > 1)
    iterate_frame_ = std::make_shared<std::string>();
  const std::string_view state = {reinterpret_cast<const char*>(s->state.bytes.data()),
                                  s->state.bytes.size()};
  IterateMsg{wire_id, it}.encode_into(iterate_frame_.get(), &state, 1);
  Status sent;
  for (const auto& id : participants) {
    sent = ctx_.workers->send(id, OutgoingFrame(std::string(), *iterate_frame_, iterate_frame_));
    if (!sent.ok()) {
      drop_executors_of(id);
      break;
    }
  }
  record_finished_iteration(*s);  // the previous iteration's, while this one runs
  if (!sent.ok()) return sent.with_context("iteration " + std::to_string(it));
  ctx_.book->update(run_, [&](RunRecord& r) {
    r.progress_iteration = it;
    r.rows_done.clear();
  });
  expect_answers("iteration", it, iteration_deadline_s(), participants);
  // Each result is folded as soon as those of the workers before it are.
  LIZARD_RETURN_IF_ERROR(collect_and_fold(wire_id, participants, it, s));
  const auto t_update = SteadyClock::now();
  LIZARD_ASSIGN_OR_RETURN(*done, s->hooks->update_state(s->agg, &s->state, it));
  const double fold_ms = results_fold_ms_ + ms_since(t_update);
  finished_.due = true;
  finished_.timing = {it, ms_since(t0), results_kernel_ms_, fold_ms, nullptr};
  finished_.done = *done;
  return Status::Ok();
}

void RunDriver::record_finished_iteration(const Sections& s) {
  if (!finished_.due) return;
  finished_.due = false;
  IterationTiming timing = std::move(finished_.timing);
  timing.state = state_scalars(s);
  const int64_t iterations = timing.iteration + 1;
  record_iteration(std::move(timing));
  save_checkpoint(iterations, finished_.done, s);
}

nlohmann::json RunDriver::state_scalars(const Sections& s) const {
  return section_to_json(s.state, run_->program->image.manifest, run_->request.params,
                         /*scalars_only=*/true);
}

void RunDriver::record_iteration(IterationTiming timing) {
  if (ctx_.metrics) ctx_.metrics->observe_iteration(timing.ms, timing.kernel_ms, timing.fold_ms);
  slowest_iteration_ms_ = std::max(slowest_iteration_ms_, timing.ms);
  ctx_.book->update(run_, [&](RunRecord& r) {
    if (restart_pending_) r.timings.clear();  // the first iteration of a run started over
    r.iterations = timing.iteration + 1;
    if (r.plan)
      for (const auto& e : r.plan->entries) r.rows_done[{e.worker_id, e.executor}] = e.rows;
    r.timings.push_back(std::move(timing));
  });
  restart_pending_ = false;
}

void RunDriver::end_on_workers(const std::string& wire_id,
                               const std::vector<std::string>& participants, bool want_outputs,
                               const std::vector<std::string>& outputs) {
  // A cancelled run, or one past its time limit, may have kernels that never
  // return: its workers kill them instead of waiting for them to end.
  // An abort goes ahead of the rows still queued for the workers.
  const std::string frame =
      abort_ ? encode(RunAbortMsg{wire_id, "cancelled or past its time limit"}.to_message())
             : encode(RunEndMsg{wire_id, want_outputs, outputs}.to_message());
  for (const auto& id : participants)
    (void)ctx_.workers->send(id, abort_ ? OutgoingFrame::control(frame) : OutgoingFrame(frame));
}

// Ends the run on its workers and gathers the wanted output fields in row order.
Status RunDriver::gather_outputs(const std::string& wire_id,
                                 const std::vector<std::string>& participants, const Sections& s) {
  const Manifest& m = run_->program->image.manifest;
  const RunRequest& req = run_->request;
  std::vector<std::string> wanted;
  for (size_t k = 0; k < m.dataset.size(); ++k)
    if (req.want_output[k]) wanted.push_back(m.dataset[k].name);
  end_on_workers(wire_id, participants, !wanted.empty(), wanted);
  std::map<std::string, OutputField> outputs;
  if (!wanted.empty()) {
    expect_answers("run_outputs", 0, load_deadline_s(req.rows), participants);
    auto outs = collect(wire_id, MessageType::kRunOutputs, participants);
    if (!outs.ok()) return outs.status().with_context("gathering outputs");
    for (size_t k = 0; k < m.dataset.size(); ++k) {
      const FieldSpec& f = m.dataset[k];
      if (!req.want_output[k]) continue;
      OutputField of{f.type, {}, ""};
      LIZARD_ASSIGN_OR_RETURN(of.dims, field_dims(f, m, req.params, req.rows));
      for (const auto& id : participants) {  // plan order == row order
        const Message& msg = outs->at(id);
        auto parsed = RunOutputsMsg::parse(msg.header);
        if (!parsed.ok()) return parsed.status().with_context("worker " + id);
        size_t off = 0;
        for (const auto& part : parsed->fields) {
          if (off + part.bytes > msg.payload.size())
            return internal_error("worker " + id + " sent fewer output bytes than it announced");
          if (part.name == f.name) of.bytes.append(msg.payload, off, part.bytes);
          off += part.bytes;
        }
      }
      outputs[f.name] = std::move(of);
    }
  }
  auto add_section = [&](const SectionBuffer& sec) {
    for (const auto& slot : sec.slots) {
      auto dims = field_dims(*slot.spec, m, req.params);
      outputs.emplace(
          slot.spec->name,
          OutputField{slot.spec->type, dims.ok() ? dims.value() : std::vector<int64_t>{},
                      std::string(reinterpret_cast<const char*>(sec.data(slot)), slot.bytes)});
    }
  };
  add_section(s.state);
  add_section(s.agg);
  json result = {{"state", section_to_json(s.state, m, req.params)},
                 {"aggregate", section_to_json(s.agg, m, req.params)}};
  ctx_.book->update(run_, [&](RunRecord& r) {
    r.result = std::move(result);
    r.outputs = std::move(outputs);
  });
  return Status::Ok();
}

}  // namespace lizard
