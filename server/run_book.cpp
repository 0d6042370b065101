#include "server/run_book.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

#include "common/clock.h"
#include "common/heap_trim.h"
#include "dataset/npy.h"
#include "program/specialisation.h"
#include "server/http_routes.h"
#include "server/ownership_json.h"

namespace lizard {

using nlohmann::json;

namespace {
HttpResponse record_response(const json& record) {
  return {200, "application/json", record.dump(2) + "\n"};
}
}  // namespace

RunBook::RunBook(const std::string& state_dir, uint64_t held_output_bytes)
    : max_held_output_bytes_(held_output_bytes) {
  restore(state_dir);
}

namespace {
std::shared_ptr<RunRecord> new_run(std::shared_ptr<const ProgramEntry> program,
                                   const std::string& hash, RunRequest request) {
  auto run = std::make_shared<RunRecord>();
  run->hash = hash;
  run->params_json = request.params.to_json(program->image.manifest);
  run->program = std::move(program);
  run->request = std::move(request);
  run->created_at = now_iso();
  run->queued_since = SteadyClock::now();
  return run;
}
}  // namespace

std::shared_ptr<RunRecord> RunBook::submit(std::shared_ptr<const ProgramEntry> program,
                                           const std::string& hash, RunRequest request) {
  auto run = new_run(std::move(program), hash, std::move(request));
  std::lock_guard<std::mutex> l(mu_);
  run->seq = next_seq_++;
  run->id = "r" + std::to_string(run->seq);
  runs_[run->id] = run;
  queue_.push_back(run);
  persist_locked(*run, run->to_json());
  spdlog::info("queued {} for program {} ({} rows)", run->id, hash.substr(0, 12),
               run->request.rows);
  return run;
}

// The request and the record are stored before the run is listed, outside the
// lock (a request with inline values may be large).
Result<std::shared_ptr<RunRecord>> RunBook::enqueue(std::shared_ptr<const ProgramEntry> program,
                                                    const std::string& hash, RunRequest request,
                                                    json body, bool answered_when_done) {
  auto run = new_run(std::move(program), hash, std::move(request));
  run->uploads = uploads_named(body);
  {
    std::lock_guard<std::mutex> l(mu_);
    run->seq = next_seq_++;
    run->id = "r" + std::to_string(run->seq);
  }
  if (store_ && answered_when_done) {
    // Refused at once where the store is known to take nothing (a state
    // directory removed), rather than after the run: its result could not
    // be stored.
    if (Status st = store_->health(); !st.ok()) {
      spdlog::error("run refused: {}", st.message());
      return st;
    }
    run->resumable = true;
    writer_->save_submission(run->id, std::move(body), run->seq, "queued", run->to_json());
  } else if (store_) {
    run->resumable = true;
    Status st = store_->save_request(run->id, body);
    if (st.ok()) st = store_->save(run->id, run->seq, "queued", run->to_json());
    if (!st.ok()) {
      (void)store_->remove(run->id);
      spdlog::error("run refused: {}", st.message());
      return st;
    }
  }
  std::lock_guard<std::mutex> l(mu_);
  runs_[run->id] = run;
  queue_.push_back(run);
  spdlog::info("queued {} for program {} ({} rows)", run->id, hash.substr(0, 12),
               run->request.rows);
  return run;
}

uint64_t RunBook::add_waiter(const std::shared_ptr<RunRecord>& run, Responder respond) {
  json record;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!is_finished(run->status)) {
      const uint64_t token = next_waiter_++;
      run->waiters.emplace(token, std::move(respond));
      return token;
    }
    record = run->to_json();
  }
  respond(record_response(record));
  return 0;
}

Responder RunBook::take_waiter(const std::shared_ptr<RunRecord>& run, uint64_t token) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = run->waiters.find(token);
  if (it == run->waiters.end()) return nullptr;
  Responder respond = std::move(it->second);
  run->waiters.erase(it);
  return respond;
}

std::shared_ptr<RunRecord> RunBook::find(const std::string& id) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = runs_.find(id);
  return it == runs_.end() ? nullptr : it->second;
}

std::vector<PendingRun> RunBook::pending() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<PendingRun> out;
  std::vector<std::shared_ptr<RunRecord>> recovering;
  for (const auto& [_, r] : runs_)
    if (r->needs_executors && r->status == RunStatus::kRunning) recovering.push_back(r);
  std::sort(recovering.begin(), recovering.end(),
            [](const auto& a, const auto& b) { return a->seq < b->seq; });
  const auto now = SteadyClock::now();
  for (const auto& r : recovering) {
    const ExecutorDemand& d = r->request.executors;
    // After a server restart, as many executors as it held (the same plan)
    // while they may still come back.
    const int64_t min =
        r->restarted && now < r->resume_deadline ? std::max<int64_t>(1, r->resume_executors) : 1;
    out.push_back({r->id,
                   r->hash,
                   min,
                   d.max,
                   r->bypassed,
                   d.gpus_only,
                   d.min_free_memory,
                   {},
                   r->request.owner,
                   true});
    // Nothing passes it meanwhile: a run taking its executors would change its plan.
    if (min > 1) return out;
  }
  for (const auto& r : queue_) {
    const ExecutorDemand& d = r->request.executors;
    out.push_back({r->id, r->hash, d.min, d.max, r->bypassed, d.gpus_only, d.min_free_memory,
                   row_sources(r->request), r->request.owner, false, r->request.priority});
  }
  return out;
}

void RunBook::note_bypassed(const std::vector<std::string>& ids) {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& id : ids)
    if (auto it = runs_.find(id); it != runs_.end()) ++it->second->bypassed;
}

bool RunBook::start(const std::shared_ptr<RunRecord>& run,
                    const std::vector<ExecutorRef>& executors) {
  double queued_ms = 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (run->cancel_requested || run->finishing || is_finished(run->status)) return false;
    run->executors = executors;
    run->bypassed = 0;
    if (run->needs_executors) {
      run->needs_executors = false;
      return true;
    }
    auto q = std::find(queue_.begin(), queue_.end(), run);
    if (q != queue_.end()) queue_.erase(q);
    run->status = RunStatus::kRunning;
    run->started_at = now_iso();
    run->running_since = SteadyClock::now();
    queued_ms = ms_since(run->queued_since);
    run->phases.queued_ms = queued_ms;
    persist_later_locked(*run);
  }
  if (events_.started) events_.started(queued_ms / 1e3);
  return true;
}

void RunBook::persist(const std::shared_ptr<RunRecord>& run) {
  std::lock_guard<std::mutex> l(mu_);
  if (run->finishing || is_finished(run->status)) return;
  persist_later_locked(*run);
}

void RunBook::persist_later_locked(const RunRecord& run) {
  if (writer_) writer_->save_record(run.id, run.seq, run_status_name(run.status), run.to_json());
}

void RunBook::persist_locked(const RunRecord& run, const json& record) {
  if (!store_) return;
  Status st = store_->save(run.id, run.seq, run_status_name(run.status), record);
  if (!st.ok()) spdlog::error("run {} not saved: {}", run.id, st.message());
}

Result<RunBook::CancelOutcome> RunBook::cancel(const std::string& id) {
  std::shared_ptr<RunRecord> run;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = runs_.find(id);
    if (it == runs_.end()) return not_found("no such run: " + id);
    run = it->second;
    if (is_finished(run->status))
      return Status(Code::kConflict,
                    "run " + id + " is " + run_status_name(run->status) + " already");
    run->cancel_requested = true;
    auto q = std::find(queue_.begin(), queue_.end(), run);
    if (q == queue_.end()) return CancelOutcome::kCancelling;
    queue_.erase(q);
  }
  finish(run, Status(Code::kCancelled, "cancelled before it started"));
  return CancelOutcome::kCancelled;
}

namespace {
RunStatus status_of_end(const Status& st) {
  return st.ok()                         ? RunStatus::kDone
         : st.code() == Code::kCancelled ? RunStatus::kCancelled
                                         : RunStatus::kFailed;
}
}  // namespace

// The run is listed with its final status (and its waiters answered) only
// once its finished record is stored, or, where it cannot be, as failed with
// the reason.
void RunBook::finish(const std::shared_ptr<RunRecord>& run, const Status& st) {
  RunStatus final_status = status_of_end(st);
  bool store_it = false;
  bool resumes = false;  // left stored as it was, to go on at the server's next start
  double running_s = 0;
  std::optional<double> queued_s;  // it ends in the queue
  {
    std::lock_guard<std::mutex> l(mu_);
    if (is_finished(run->status) || run->finishing) return;
    run->finishing = true;
    if (run->status == RunStatus::kQueued) {  // its record says how long it waited
      run->phases.queued_ms = ms_since(run->queued_since);
      queued_s = *run->phases.queued_ms / 1e3;
    }
    if (run->status == RunStatus::kRunning &&
        run->running_since != std::chrono::steady_clock::time_point{})
      running_s = ms_since(run->running_since) / 1e3;
    // A server shutting down leaves unfinished runs stored as they were, to
    // resume at its next start.
    store_it = store_ && (st.ok() || !suspended_);
    resumes = store_ && !st.ok() && suspended_;
    if (!resumes) {
      run->error = st.ok() ? "" : st.message();
      run->finished_at = now_iso();
    }
    run->executors.clear();
    run->needs_executors = false;
    auto q = std::find(queue_.begin(), queue_.end(), run);
    if (q != queue_.end()) queue_.erase(q);
  }
  if (store_it) final_status = store_finished(run, final_status);
  std::map<uint64_t, Responder> waiters;
  json record;
  size_t dropped = 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    // A run that resumes keeps the status it had: whoever asks before the
    // server is gone sees it running (or queued), never failed.
    if (!resumes) run->status = final_status;
    // One that resumes stays finishing: nothing starts, stores or ends it
    // again in this process.
    run->finishing = resumes;
    if (!resumes) dropped = drop_inline_rows(&run->request);
    waiters.swap(run->waiters);
    record = run->to_json();
  }
  if (dropped >= kLargeBodyBytes) return_freed_heap();
  if (final_status == RunStatus::kDone)
    spdlog::info("{} done: {} iteration(s) in {:.1f} ms", run->id, run->iterations,
                 run->elapsed_ms);
  else if (resumes)
    spdlog::info(
        "{} interrupted by the server's shutdown at iteration {}: it resumes when the "
        "server starts again",
        run->id, run->iterations);
  else
    spdlog::warn("{} {}: {}", run->id, run_status_name(final_status), run->error);
  if (events_.finished && !resumes) events_.finished(final_status, running_s);
  if (events_.ended_queued && queued_s && !resumes) events_.ended_queued(*queued_s);
  const HttpResponse answer =
      resumes ? error_response(unavailable("the server is shutting down: " + run->id +
                                           " resumes when it starts again"))
              : record_response(record);
  for (auto& [_, respond] : waiters) respond(answer);
}

// Stores the ended run's record and fields (large ones are files, written and
// synced, so outside the lock).  Where that fails, the run is failed instead
// (a run whose result is not stored is never reported done) and its failure
// stored, on the disk space the store keeps in reserve when the disk is full;
// where even that fails, a restarted server resumes the run from its last
// checkpoint.  Returns the status the run ends with.
RunStatus RunBook::store_finished(const std::shared_ptr<RunRecord>& run, RunStatus status) {
  if (writer_) (void)writer_->settle(run->id);  // the finished record drops its checkpoint
  std::vector<RunStore::FieldBytes> fields;
  for (const auto& [name, f] : run->outputs)
    fields.push_back({name, npy_header(f.type, f.dims), f.view()});
  auto record_as = [&](RunStatus s) {
    std::lock_guard<std::mutex> l(mu_);
    json j = run->to_json();
    j["status"] = run_status_name(s);
    return j;
  };
  const auto t_store = SteadyClock::now();
  Status saved =
      store_->save_finished(run->id, run->seq, run_status_name(status), record_as(status), fields);
  spdlog::debug("{}: its record and {} field(s) stored in {:.3f} ms", run->id, fields.size(),
                ms_since(t_store));
  if (saved.ok()) {
    std::lock_guard<std::mutex> l(mu_);
    hold_stored_outputs_locked(run);
    return status;
  }
  spdlog::error("{}: its {} record could not be stored: {}", run->id, run_status_name(status),
                saved.message());
  if (status == RunStatus::kDone) {
    status = RunStatus::kFailed;
    update(run, [&](RunRecord& r) {
      r.error = "the run ended, but the server could not store its result: " + saved.message();
      r.outputs.clear();
      r.result = nullptr;
    });
  }
  if (saved.code() == Code::kStorageFull && store_->release_reserved_space())
    spdlog::error(
        "the disk of the state directory is full: its reserved space is freed to "
        "store the failure of {}; free space, then restart the server",
        run->id);
  saved = store_->save_finished(run->id, run->seq, run_status_name(status), record_as(status), {});
  if (!saved.ok())
    spdlog::error(
        "{}: its failure could not be stored either ({}): a restarted server resumes "
        "it from its last stored checkpoint",
        run->id, saved.message());
  return status;
}

void RunBook::fail_queued(const std::string& reason) {
  std::deque<std::shared_ptr<RunRecord>> queued;
  {
    std::lock_guard<std::mutex> l(mu_);
    queued.swap(queue_);
  }
  for (auto& run : queued) finish(run, unavailable(reason));
}

void RunBook::progress(const std::string& worker_id, const ProgressMsg& m) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = runs_.find(std::string(run_of_wire_id(m.run_id)));
  if (it == runs_.end()) return;
  RunRecord& run = *it->second;
  if (m.compiling) {  // until its rows are loaded (the driver clears it then)
    if (run.status == RunStatus::kRunning && run.program) {
      run.compiling = run_specialisation(run.program->image.manifest, run.request.params).to_json();
      // A quick build on any worker is what the run begins on first.
      if (run.compiling_build != "quick") run.compiling_build = m.compiling_build;
    }
    return;
  }
  if (run.status != RunStatus::kRunning || m.iteration != run.progress_iteration) return;
  int64_t& done = run.rows_done[{worker_id, m.executor}];
  done = std::max(done, m.rows_done);
}

Result<json> RunBook::list_json(const std::optional<std::string>& status) const {
  std::optional<RunStatus> want;
  if (status) {
    want = parse_run_status(*status);
    if (!want)
      return invalid_argument("status must be one of queued, running, done, failed, cancelled");
  }
  std::lock_guard<std::mutex> l(mu_);
  std::vector<std::shared_ptr<RunRecord>> ordered;
  for (const auto& [_, r] : runs_) ordered.push_back(r);
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a->seq < b->seq; });
  json out = json::array();
  for (const auto& r : ordered) {
    if (want && r->status != *want) continue;
    json j = r->to_json();
    j.erase("result");
    j.erase("timings");
    out.push_back(std::move(j));
  }
  return out;
}

Result<json> RunBook::get_json(const std::string& id) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = runs_.find(id);
  if (it == runs_.end()) return not_found("no such run: " + id);
  return it->second->to_json();
}

std::map<std::string, int64_t> RunBook::held_by_owner() const {
  std::lock_guard<std::mutex> l(mu_);
  std::map<std::string, int64_t> out;
  for (const auto& [_, r] : runs_)
    if (r->status == RunStatus::kRunning)
      out[r->request.owner] += static_cast<int64_t>(r->executors.size());
  return out;
}

size_t RunBook::queued_of(const std::string& owner) const {
  std::lock_guard<std::mutex> l(mu_);
  size_t n = 0;
  for (const auto& r : queue_) n += r->request.owner == owner;
  return n;
}

Result<Ownership> RunBook::access_of(const std::string& id) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = runs_.find(id);
  if (it == runs_.end()) return not_found("no such run: " + id);
  const RunRecord& r = *it->second;
  if (!r.restored.is_object()) return Ownership{r.request.owner, r.request.share};
  return ownership_in(r.restored);
}

void RunBook::hold_stored_outputs_locked(const std::shared_ptr<RunRecord>& run) {
  uint64_t bytes = 0;
  for (auto& [name, f] : run->outputs) {
    f.stored = true;
    bytes += f.size();
  }
  if (bytes == 0) return;
  held_outputs_.push_back(run);
  held_output_bytes_ += bytes;
  while (held_output_bytes_ > max_held_output_bytes_ && !held_outputs_.empty()) {
    for (auto& [name, f] : held_outputs_.front()->outputs) {
      held_output_bytes_ -= f.size();
      f.bytes.reset();  // downloads under way keep theirs
    }
    held_outputs_.pop_front();
  }
}

Result<std::string> RunBook::field_npy(const std::string& id, const std::string& name) const {
  LIZARD_ASSIGN_OR_RETURN(FieldDownload d, field_download(id, name));
  return d.head + std::string(d.tail);
}

Result<RunBook::FieldDownload> RunBook::field_download(const std::string& id,
                                                       const std::string& name) const {
  std::shared_ptr<RunRecord> run;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = runs_.find(id);
    if (it != runs_.end() && is_finished(it->second->status)) run = it->second;
    if (!run) return not_found("no finished run " + id);
    // Held in memory (or never stored): shared under the lock, as a newer
    // run's fields may let go of these bytes.
    auto f = run->outputs.find(name);
    if (f != run->outputs.end() && (!f->second.stored || f->second.bytes)) {
      const OutputField& of = f->second;
      return FieldDownload{npy_header(of.type, of.dims), of.view(), of.bytes};
    }
  }
  auto from_store = [&]() -> Result<FieldDownload> {
    LIZARD_ASSIGN_OR_RETURN(std::string blob, store_->load_blob(run->id, name));
    return FieldDownload{std::move(blob), {}, nullptr};
  };
  auto f = run->outputs.find(name);  // its entries no longer change, only their bytes
  if (f != run->outputs.end() && store_) return from_store();
  if (store_ && run->restored.contains("fields") && run->restored["fields"].contains(name)) {
    auto blob = from_store();
    if (blob.ok()) return blob;
  }
  return not_found("run " + run->id + " has no field '" + name + "'");
}

Status RunBook::store_health() const {
  return store_ ? store_->health() : Status::Ok();
}

std::map<RunStatus, int64_t> RunBook::count_by_status() const {
  std::lock_guard<std::mutex> l(mu_);
  std::map<RunStatus, int64_t> out;
  for (const auto& [_, r] : runs_) ++out[r->status];
  return out;
}

}  // namespace lizard
