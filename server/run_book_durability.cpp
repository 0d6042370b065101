// RunBook's side of surviving restarts: restoring the stored runs, resuming
// the unfinished ones, per-iteration checkpoints, and pruning old records.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <optional>
#include <set>

#include "common/clock.h"
#include "server/run_book.h"
#include "server/run_files.h"

namespace lizard {

using nlohmann::json;

std::vector<std::string> uploads_named(const json& body) {
  std::vector<std::string> out;
  if (!body.is_object() || !body.contains("dataset") || !body["dataset"].is_object()) return out;
  for (const auto& [_, spec] : body["dataset"].items())
    if (spec.is_object() && spec.contains("upload") && spec["upload"].is_string())
      out.push_back(spec["upload"].get<std::string>());
  return out;
}

namespace {

// Seconds since the epoch of "2026-11-22T03:04:05Z"; nullopt when it is not one.
std::optional<std::time_t> parse_iso(const std::string& text) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!end) return std::nullopt;
  return timegm(&tm);
}

}  // namespace

// Run records from before a restart: finished ones as they were; unfinished
// ones with a stored request wait for resume(); those without (stored by an
// older server) fail, since they cannot be run again.
void RunBook::restore(const std::string& state_dir) {
  std::error_code ec;
  const bool fresh = !std::filesystem::exists(std::filesystem::path(state_dir) / "runs", ec);
  auto opened = RunStore::open(state_dir);
  if (!opened.ok()) {
    spdlog::error("run records will not survive a restart: {}", opened.status().message());
    return;
  }
  // A state directory lost between two starts is otherwise only seen as runs
  // numbered from r1 again.
  if (fresh)
    spdlog::warn(
        "{} is a new state directory: it holds no earlier runs, programs or uploads, "
        "and run ids start at r1",
        state_dir);
  store_ = std::move(opened).value();
  writer_ = std::make_unique<RunStoreWriter>(store_.get());
  auto stored = store_->load_all();
  if (!stored.ok()) {
    spdlog::warn("cannot read earlier run records: {}", stored.status().message());
    return;
  }
  std::lock_guard<std::mutex> l(mu_);
  for (StoredRun& s : stored.value()) {
    next_seq_ = std::max(next_seq_, s.seq + 1);
    if (!s.record.is_object()) {  // not written by this server: nothing to show
      spdlog::warn("skipping stored run {}: its record is not a JSON object", s.id);
      continue;
    }
    auto run = std::make_shared<RunRecord>();
    run->id = s.id;
    run->seq = s.seq;
    if (auto p = s.record.find("program"); p != s.record.end() && p->is_string())
      run->hash = p->get<std::string>();
    run->status = parse_run_status(s.status).value_or(RunStatus::kFailed);
    run->uploads = uploads_named(s.request);
    bool changed = false;
    if (!is_finished(run->status) && s.request.is_object()) {
      run->restored = s.record;  // listed as it was until resume()
      run->restored["status"] = s.status;
      run->restored["runtime_id"] = s.id;
      runs_[run->id] = std::move(run);
      to_resume_.push_back(std::move(s));
      continue;
    }
    if (!is_finished(run->status)) {
      s.record["error"] = "the server restarted while the run was " + s.status;
      s.record["finished_at"] = now_iso();
      run->status = RunStatus::kFailed;
      changed = true;
    }
    // The record shows the status it is listed by, under its own id.
    const json status = run_status_name(run->status);
    if (s.record.value("status", json()) != status ||
        s.record.value("runtime_id", json()) != s.id) {
      s.record["status"] = status;
      s.record["runtime_id"] = s.id;
      changed = true;
    }
    run->restored = std::move(s.record);
    if (changed) persist_locked(*run, run->restored);
    runs_[run->id] = std::move(run);
  }
  if (!runs_.empty()) spdlog::info("restored {} run record(s)", runs_.size());
}

std::vector<std::shared_ptr<RunRecord>> RunBook::resume(const ProgramLookup& programs,
                                                        const UploadLookup& uploads,
                                                        int resume_wait_s) {
  std::vector<StoredRun> stored;
  {
    std::lock_guard<std::mutex> l(mu_);
    stored.swap(to_resume_);
  }
  std::vector<std::shared_ptr<RunRecord>> running;
  for (const StoredRun& s : stored) {
    Status failure;
    auto run = resume_one(s, programs, uploads, resume_wait_s, &failure);
    if (run && run->status == RunStatus::kRunning) running.push_back(run);
    if (run) continue;
    spdlog::warn("{} cannot resume: {}", s.id, failure.message());
    std::lock_guard<std::mutex> l(mu_);
    auto it = runs_.find(s.id);
    if (it == runs_.end()) continue;
    RunRecord& r = *it->second;
    r.status = RunStatus::kFailed;
    r.restored["status"] = "failed";
    r.restored["error"] = "the server restarted while the run was " + s.status +
                          " and cannot resume it: " + failure.message();
    r.restored["finished_at"] = now_iso();
    persist_locked(r, r.restored);
  }
  if (!stored.empty())
    spdlog::info("resuming {} run(s) from before the restart ({} running)", stored.size(),
                 running.size());
  return running;
}

// A fresh record for a stored unfinished run, its request checked again
// against its program; null (and `failure`) when that no longer works.
std::shared_ptr<RunRecord> RunBook::resume_one(const StoredRun& s, const ProgramLookup& programs,
                                               const UploadLookup& uploads, int resume_wait_s,
                                               Status* failure) {
  const std::string hash = s.record.value("program", "");
  auto program = programs(hash);
  if (!program) {
    *failure = not_found("program " + hash.substr(0, 12) + " is no longer registered");
    return nullptr;
  }
  // Only on the versions of its files it read first (server/run_files.h).
  auto pinned = pinned_files_of(s.record);
  if (!pinned.ok()) {
    *failure = pinned.status();
    return nullptr;
  }
  if (Status st = check_files_unchanged(*pinned); !st.ok()) {
    *failure = st;
    return nullptr;
  }
  auto request = parse_run_request(program->image, s.request, uploads);
  if (!request.ok()) {
    *failure = request.status();
    return nullptr;
  }
  if (Status st = check_same_versions(*pinned, request->spec.files); !st.ok()) {
    *failure = st;
    return nullptr;
  }
  auto run = std::make_shared<RunRecord>();
  run->id = s.id;
  run->seq = s.seq;
  run->hash = hash;
  run->params_json = request->params.to_json(program->image.manifest);
  run->program = std::move(program);
  run->request = std::move(request).value();
  run->created_at = s.record.value("created_at", now_iso());
  run->queued_since = SteadyClock::now();
  run->uploads = uploads_named(s.request);
  run->resumable = true;
  run->restarted = true;
  std::lock_guard<std::mutex> l(mu_);
  auto placeholder = runs_.find(s.id);
  if (placeholder != runs_.end() && placeholder->second->cancel_requested) {
    *failure = Status(Code::kCancelled, "cancelled");
    return nullptr;
  }
  if (s.status == "queued") {
    run->status = RunStatus::kQueued;
    // In their order, ahead of runs submitted since the start.
    auto pos = std::find_if(queue_.begin(), queue_.end(),
                            [&](const auto& q) { return q->seq > run->seq; });
    queue_.insert(pos, run);
  } else {
    run->status = RunStatus::kRunning;
    run->started_at = s.record.value("started_at", now_iso());
    if (s.record.contains("phases")) run->phases = RunPhases::from_json(s.record["phases"]);
    if (s.record.contains("recoveries") && s.record["recoveries"].is_array())
      run->recoveries = s.record["recoveries"];
    if (s.record.contains("executors") && s.record["executors"].is_array())
      run->resume_executors = static_cast<int64_t>(s.record["executors"].size());
    run->resume_deadline = SteadyClock::now() + std::chrono::seconds(resume_wait_s);
    run->resume_from = s.checkpoint;
    run->iterations = s.checkpoint ? s.checkpoint->iteration : 0;
    run->needs_executors = true;
  }
  // Its stored record stays as it was (with the executors it held) until the
  // run changes: a second restart meanwhile finds the same.
  runs_[run->id] = run;
  return run;
}

void RunBook::checkpoint(const std::shared_ptr<RunRecord>& run, RunCheckpoint cp) {
  if (writer_ && run->resumable) writer_->save_checkpoint(run->id, std::move(cp));
}

void RunBook::flush_writes() {
  if (writer_) writer_->flush();
}

void RunBook::suspend() {
  std::lock_guard<std::mutex> l(mu_);
  suspended_ = true;
}

std::vector<std::string> RunBook::prune(int64_t keep_runs, double keep_days) {
  if (keep_runs <= 0 && keep_days <= 0) return {};
  std::vector<std::shared_ptr<RunRecord>> finished;
  std::set<std::string> still_named, named_by_pruned;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [_, r] : runs_)
      if (is_finished(r->status)) finished.push_back(r);
    std::sort(finished.begin(), finished.end(),
              [](const auto& a, const auto& b) { return a->seq > b->seq; });  // newest first
    const std::time_t now = std::time(nullptr);
    std::vector<std::shared_ptr<RunRecord>> gone;
    for (size_t i = 0; i < finished.size(); ++i) {
      const RunRecord& r = *finished[i];
      bool old = keep_runs > 0 && static_cast<int64_t>(i) >= keep_runs;
      const std::string at =
          r.restored.is_object() ? r.restored.value("finished_at", "") : r.finished_at;
      if (auto t = parse_iso(at); keep_days > 0 && t)
        old = old || static_cast<double>(now - *t) > keep_days * 86400.0;
      if (old) gone.push_back(finished[i]);
    }
    for (const auto& r : gone) {
      runs_.erase(r->id);
      named_by_pruned.insert(r->uploads.begin(), r->uploads.end());
      auto held = std::find(held_outputs_.begin(), held_outputs_.end(), r);
      if (held != held_outputs_.end()) {
        for (const auto& [name, f] : r->outputs) held_output_bytes_ -= f.size();
        held_outputs_.erase(held);
      }
    }
    for (const auto& [_, r] : runs_) still_named.insert(r->uploads.begin(), r->uploads.end());
    finished = std::move(gone);
  }
  for (const auto& r : finished) {
    Status st = store_ ? store_->remove(r->id) : Status::Ok();
    if (!st.ok()) spdlog::warn("run {} not pruned from the store: {}", r->id, st.message());
  }
  if (!finished.empty()) spdlog::info("pruned {} finished run record(s)", finished.size());
  std::vector<std::string> unused;
  for (const auto& id : named_by_pruned)
    if (!still_named.count(id)) unused.push_back(id);
  return unused;
}

bool RunBook::has_unfinished_of(const std::string& hash) const {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& [_, r] : runs_)
    if (r->hash == hash && !is_finished(r->status)) return true;
  return false;
}

}  // namespace lizard
