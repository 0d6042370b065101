#include "server/run_driver.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
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

// The run's state and aggregate sections, kept across attempts.
struct RunDriver::Sections {
  SectionBuffer state, agg, partial, initial_state;
};

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
    Status st = drive();
    ctx_.book->update(run_, [&](RunRecord& r) { r.elapsed_ms = ms_since(t0); });
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
  if (req.state)
    s.state.bytes = req.state->bytes;
  else
    prog.hooks->init_state(m, req.params, &s.state);
  LIZARD_ASSIGN_OR_RETURN(s.agg, make_section(m.aggregate, m, req.params));
  LIZARD_ASSIGN_OR_RETURN(s.partial, make_section(m.aggregate, m, req.params));
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
  for (int attempt = 0;; ++attempt) {
    const std::string wire_id = run_->id + "." + std::to_string(attempt);
    std::vector<std::string> participants;
    Status st = wait_for_placement();
    if (st.ok()) {
      auto started = start_partitions(wire_id);
      st = started.status();
      if (st.ok()) participants = std::move(started).value();
    }
    bool done = false;
    const auto t_iter = SteadyClock::now();
    while (st.ok() && it < req.max_iterations && !done) {
      st = iterate(wire_id, participants, it, s, &done);
      if (st.ok()) ++it;
    }
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
    const bool start_over = per_row_values || gathering;
    if (start_over) {
      s->state = s->initial_state;
      it = 0;
    }
    spdlog::warn("{}: {}; re-planning and resuming at iteration {}", run_->id, st.message(), it);
    ctx_.book->update(run_, [&](RunRecord& r) {
      r.recoveries.push_back({{"resumed_at_iteration", it}, {"reason", st.message()}});
      if (start_over) {
        r.timings.clear();
        r.iterations = 0;
      }
    });
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
  return unavailable("no worker has built program " + run_->hash.substr(0, 12) + " after " +
                     std::to_string(ctx_.worker_wait_s) + " s (GET /clients lists the workers)");
}

Result<std::map<std::string, Message>> RunDriver::collect(const std::string& wire_id,
                                                          MessageType type,
                                                          const std::vector<std::string>& from) {
  std::map<std::string, Message> got;
  while (got.size() < from.size()) {
    LIZARD_RETURN_IF_ERROR(interrupted());
    auto ev = inbox_.pop_for(std::chrono::milliseconds(200));
    if (!ev) continue;
    if (std::find(from.begin(), from.end(), ev->worker_id) == from.end()) continue;
    if (ev->kind == DriverEvent::Kind::kWorkerLost) {
      drop_executors_of(ev->worker_id);
      return worker_lost("lost worker " + ev->worker_id);
    }
    if (ev->kind != DriverEvent::Kind::kMessage || ev->msg.type != type) continue;
    if (ev->msg.header.value("run_id", "") != wire_id) continue;  // an earlier attempt's
    if (ev->msg.header.contains("ok") && ev->msg.header["ok"] == false) {
      std::string error = "failed";
      if (ev->msg.header.contains("error") && ev->msg.header["error"].is_string())
        error = ev->msg.header["error"].get<std::string>();
      return runtime_error("worker " + ev->worker_id + ": " + error);
    }
    got[ev->worker_id] = std::move(ev->msg);
  }
  return got;
}

// Turns each executor's free memory (max_rows holds bytes on entry) into the
// rows it can hold; fails before any work when they cannot hold them all.
Status RunDriver::limit_rows_to_memory(std::vector<ExecutorSlot>* slots) const {
  const Manifest& m = run_->program->image.manifest;
  const ParamValues& p = run_->request.params;
  int64_t row_bytes = 0;
  for (const auto& f : m.dataset) {
    LIZARD_ASSIGN_OR_RETURN(int64_t width, row_width(f, m, p));
    row_bytes += width * static_cast<int64_t>(dtype_size(f.type));
  }
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer st, make_section(m.state, m, p));
  LIZARD_ASSIGN_OR_RETURN(SectionBuffer ag, make_section(m.aggregate, m, p));
  const int64_t fixed =
      static_cast<int64_t>(st.bytes.size() + 2 * ag.bytes.size()) + (int64_t{64} << 20);
  int64_t room = 0;
  for (auto& s : *slots) {
    const int64_t free_bytes = s.max_rows;
    s.max_rows = free_bytes <= 0 || row_bytes == 0
                     ? -1
                     : std::max<int64_t>(0, free_bytes - fixed) / row_bytes;
    room += std::max<int64_t>(0, free_bytes - fixed);
  }
  const int64_t rows = run_->request.rows;
  if (fits(rows, *slots)) return Status::Ok();
  return too_large("the dataset does not fit: " + std::to_string(rows) + " rows x " +
                   std::to_string(row_bytes) + " bytes = " + std::to_string(rows * row_bytes) +
                   " bytes, but the " + std::to_string(slots->size()) + " executor(s) have " +
                   std::to_string(room) + " bytes free between them");
}

// Plans the rows over the run's executors and loads every worker, each on a
// thread of its own so that uploaded rows stream to all of them at once.
Result<std::vector<std::string>> RunDriver::start_partitions(const std::string& wire_id) {
  const auto t0 = SteadyClock::now();
  const std::vector<ExecutorRef> held =
      ctx_.book->update(run_, [](RunRecord& r) { return r.executors; });
  std::vector<ExecutorSlot> slots = ctx_.workers->slots(held);
  if (slots.size() < held.size()) {  // a worker left before the plan
    for (const auto& e : held)
      if (!ctx_.workers->link(e.worker_id)) {
        drop_executors_of(e.worker_id);
        return worker_lost("lost worker " + e.worker_id);
      }
  }
  LIZARD_RETURN_IF_ERROR(limit_rows_to_memory(&slots));
  PartitionPlan plan = plan_partition(run_->request.rows, slots);
  ctx_.book->update(run_, [&](RunRecord& r) {
    r.plan = plan;
    r.phases["planning_ms"] = ms_since(t0);
  });
  std::map<std::string, std::vector<const PlanEntry*>> by_worker;
  for (const auto& e : plan.entries)
    if (e.rows > 0) by_worker[e.worker_id].push_back(&e);
  const auto t_load = SteadyClock::now();
  std::vector<std::string> participants;
  std::vector<std::future<Status>> loads;
  for (const auto& [id, entries] : by_worker) {
    participants.push_back(id);
    loads.push_back(std::async(std::launch::async, [this, &wire_id, id = id, entries = entries] {
      return start_worker(wire_id, id, entries);
    }));
  }
  Status loaded = Status::Ok();
  for (auto& f : loads) {
    Status st = f.get();
    if (loaded.ok() && !st.ok()) loaded = st;
  }
  if (!loaded.ok()) {
    end_on_workers(wire_id, participants, false);
    return loaded;
  }
  auto ready = collect(wire_id, MessageType::kRunReady, participants);
  if (!ready.ok()) {
    end_on_workers(wire_id, participants, false);
    return ready.status().with_context("loading the dataset");
  }
  double compile_ms = 0;
  bool cache_hit = true;
  for (const auto& [_, msg] : ready.value()) {
    auto r = RunReadyMsg::parse(msg.header);
    if (!r.ok()) continue;
    compile_ms = std::max(compile_ms, r->compile_ms);
    cache_hit = cache_hit && r->compile_cache_hit;
    if (ctx_.metrics) ctx_.metrics->count_run_ready(r->compile_cache_hit, r->compile_ms);
  }
  ctx_.book->update(run_, [&](RunRecord& r) {
    r.phases["loading_ms"] = ms_since(t_load);
    r.phases["compile_ms"] = compile_ms;
    r.phases["compile_cache_hit"] = cache_hit;
  });
  return participants;
}

// Sends one worker its rows (uploaded ones as chunks, others as sources it
// reads or generates) and then its run_start.
Status RunDriver::start_worker(const std::string& wire_id, const std::string& worker_id,
                               const std::vector<const PlanEntry*>& entries) {
  const Manifest& m = run_->program->image.manifest;
  const RunRequest& req = run_->request;
  RunStartMsg start;
  start.run_id = wire_id;
  start.hash = run_->hash;
  start.params = run_->params_json;
  start.seed = req.seed;
  // A map-style run (one iteration) runs in slices that report progress.
  start.progress = req.max_iterations == 1 || !run_->program->hooks->has_update();
  for (const auto* e : entries) start.parts.push_back({e->executor, e->first_row, e->rows});
  start.first_row = entries.front()->first_row;
  for (const auto* e : entries) start.rows += e->rows;
  std::shared_ptr<WorkerLink> link = ctx_.workers->link(worker_id);
  if (!link) return worker_lost("lost worker " + worker_id);
  std::string payload;
  for (size_t k = 0; k < m.dataset.size(); ++k) {
    const DatasetSource& s = req.dataset[k];
    FieldSource f;
    f.name = m.dataset[k].name;
    switch (s.kind) {
      case DatasetSource::Kind::kInline: {
        const size_t row_bytes = static_cast<size_t>(s.width) * dtype_size(m.dataset[k].type);
        f.source = "inline";
        f.offset = payload.size();
        f.bytes = row_bytes * static_cast<size_t>(start.rows);
        payload.append(reinterpret_cast<const char*>(s.values.data()) +
                           row_bytes * static_cast<size_t>(start.first_row),
                       f.bytes);
        break;
      }
      case DatasetSource::Kind::kPath:
        f.source = "path";
        f.path = s.path;
        f.format = file_format_name(s.format);
        break;
      case DatasetSource::Kind::kGenerate:
        f.source = "generate";
        f.kernel = s.generator;
        break;
      case DatasetSource::Kind::kUpload:
        f.source = "chunks";  // sent just before run_start
        LIZARD_RETURN_IF_ERROR(stream_upload_rows(*link, wire_id, k, s, m.dataset[k].type,
                                                  start.first_row, start.rows));
        break;
      case DatasetSource::Kind::kNone:
        break;
    }
    start.fields.push_back(std::move(f));
  }
  link->send(encode(start.to_message(std::move(payload))));
  return Status::Ok();
}

Status RunDriver::iterate(const std::string& wire_id, const std::vector<std::string>& participants,
                          int64_t it, Sections* s, bool* done) {
  const ProgramEntry& prog = *run_->program;
  const Manifest& m = prog.image.manifest;
  const RunRequest& req = run_->request;
  const auto t0 = SteadyClock::now();
  ctx_.book->update(run_, [&](RunRecord& r) {
    r.progress_iteration = it;
    r.rows_done.clear();
  });
  const std::string frame = encode(IterateMsg{wire_id, it}.to_message(
      std::string(s->state.bytes.begin(), s->state.bytes.end())));
  for (const auto& id : participants) {
    Status st = ctx_.workers->send(id, frame);
    if (!st.ok()) {
      drop_executors_of(id);
      return st.with_context("iteration " + std::to_string(it));
    }
  }
  auto results = collect(wire_id, MessageType::kIterationResult, participants);
  if (!results.ok()) return results.status().with_context("iteration " + std::to_string(it));
  const auto t_fold = SteadyClock::now();
  set_identity(&s->agg);
  double kernel_ms = 0;
  const size_t n = s->partial.bytes.size();
  for (auto& [id, msg] : results.value()) {
    if (msg.header.contains("kernel_ms") && msg.header["kernel_ms"].is_number())
      kernel_ms = std::max(kernel_ms, msg.header["kernel_ms"].get<double>());
    if (n == 0) continue;
    if (msg.payload.size() % n != 0)
      return internal_error("worker " + id + " sent an aggregate of " +
                            std::to_string(msg.payload.size()) + " bytes; expected a multiple of " +
                            std::to_string(n));
    for (size_t off = 0; off < msg.payload.size(); off += n) {
      std::memcpy(s->partial.bytes.data(), msg.payload.data() + off, n);
      fold_into(&s->agg, s->partial);
      if (m.has_custom_reducer()) prog.hooks->aggregate(m, req.params, &s->agg, &s->partial);
    }
  }
  *done = prog.hooks->update_state(m, req.params, &s->agg, &s->state, it);
  IterationTiming timing{it, ms_since(t0), kernel_ms, ms_since(t_fold),
                         section_to_json(s->state, m, req.params, /*scalars_only=*/true)};
  if (ctx_.metrics) ctx_.metrics->observe_iteration(timing.ms, timing.kernel_ms, timing.fold_ms);
  ctx_.book->update(run_, [&](RunRecord& r) {
    r.iterations = it + 1;
    if (r.plan)
      for (const auto& e : r.plan->entries) r.rows_done[{e.worker_id, e.executor}] = e.rows;
    r.timings.push_back(std::move(timing));
  });
  return Status::Ok();
}

void RunDriver::end_on_workers(const std::string& wire_id,
                               const std::vector<std::string>& participants, bool want_outputs,
                               const std::vector<std::string>& outputs) {
  // A cancelled run, or one past its time limit, may have kernels that never
  // return: its workers kill them instead of waiting for them to end.
  const std::string frame =
      abort_ ? encode(RunAbortMsg{wire_id, "cancelled or past its time limit"}.to_message())
             : encode(RunEndMsg{wire_id, want_outputs, outputs}.to_message());
  for (const auto& id : participants) (void)ctx_.workers->send(id, frame);
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
