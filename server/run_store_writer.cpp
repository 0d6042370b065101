#include "server/run_store_writer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "common/heap_trim.h"

namespace lizard {

namespace {

// Whether a run request carried rows inline (a `values` source): the
// large requests, whose parse is worth handing back once written.
bool carries_inline_rows(const nlohmann::json& body) {
  auto dataset = body.find("dataset");
  if (dataset == body.end() || !dataset->is_object()) return false;
  for (const auto& [name, source] : dataset->items())
    if (source.is_object() && source.contains("values")) return true;
  return false;
}

}  // namespace

RunStoreWriter::RunStoreWriter(RunStore* store, std::chrono::milliseconds checkpoint_every)
    : store_(store), checkpoint_every_(checkpoint_every) {
  thread_ = std::thread([this] { write_loop(); });
}

RunStoreWriter::~RunStoreWriter() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void RunStoreWriter::save_submission(const std::string& run_id, nlohmann::json body, uint64_t seq,
                                     std::string status, nlohmann::json record) {
  {
    std::lock_guard<std::mutex> l(mu_);
    Pending& p = pending_[run_id];
    p.request = std::move(body);
    p.record = Record{seq, std::move(status), std::move(record)};
  }
  cv_.notify_all();
}

void RunStoreWriter::save_record(const std::string& run_id, uint64_t seq, std::string status,
                                 nlohmann::json record) {
  {
    std::lock_guard<std::mutex> l(mu_);
    pending_[run_id].record = Record{seq, std::move(status), std::move(record)};
  }
  cv_.notify_all();
}

void RunStoreWriter::save_checkpoint(const std::string& run_id, RunCheckpoint cp) {
  {
    std::lock_guard<std::mutex> l(mu_);
    pending_[run_id].checkpoint = std::move(cp);
  }
  cv_.notify_all();
}

Status RunStoreWriter::settle(const std::string& run_id) {
  std::optional<nlohmann::json> request;
  {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return writing_run_ != run_id || !writing_record_; });
    auto it = pending_.find(run_id);
    if (it != pending_.end()) {
      request = std::move(it->second.request);
      pending_.erase(it);
    }
    if (writing_run_ == run_id) settled_while_writing_ = true;
    unrequested_.erase(run_id);
    checkpoint_written_.erase(run_id);
  }
  if (!request) return Status::Ok();
  Status st = store_->save_request(run_id, *request);
  if (!st.ok()) spdlog::warn("{}: its request not saved: {}", run_id, st.message());
  return st;
}

void RunStoreWriter::flush() {
  std::unique_lock<std::mutex> l(mu_);
  ++flushing_;  // checkpoints are due at once meanwhile
  cv_.notify_all();
  cv_.wait(l, [this] { return pending_.empty() && writing_run_.empty(); });
  --flushing_;
}

SteadyClock::time_point RunStoreWriter::checkpoint_due(const std::string& run_id) const {
  if (stopping_ || flushing_ > 0) return SteadyClock::time_point::min();
  auto it = checkpoint_written_.find(run_id);
  return it == checkpoint_written_.end() ? SteadyClock::time_point::min()
                                         : it->second + checkpoint_every_;
}

// The first run (by id) with a write due at `now`; also the time the next
// checkpoint falls due when none is.
std::map<std::string, RunStoreWriter::Pending>::iterator RunStoreWriter::next_due(
    SteadyClock::time_point now, SteadyClock::time_point* next) {
  *next = SteadyClock::time_point::max();
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    const Pending& p = it->second;
    if (p.request || p.record) return it;
    if (!p.checkpoint) continue;
    const auto due = checkpoint_due(it->first);
    if (due <= now) return it;
    *next = std::min(*next, due);
  }
  return pending_.end();
}

// Writes one run's due writes at a time, in the order of their run ids;
// stops once nothing is pending after stop was asked for.
void RunStoreWriter::write_loop() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    const auto now = SteadyClock::now();
    SteadyClock::time_point next;
    auto it = next_due(now, &next);
    if (it == pending_.end()) {
      if (stopping_ && pending_.empty()) return;
      if (next == SteadyClock::time_point::max())
        cv_.wait(l);
      else
        cv_.wait_until(l, next);
      continue;
    }
    const std::string run_id = it->first;
    Pending job;
    job.request = std::move(it->second.request);
    job.record = std::move(it->second.record);
    it->second.request.reset();
    it->second.record.reset();
    if (it->second.checkpoint && checkpoint_due(run_id) <= now) {
      job.checkpoint = std::move(it->second.checkpoint);
      it->second.checkpoint.reset();
      checkpoint_written_[run_id] = now;
    }
    if (!it->second.checkpoint) pending_.erase(it);
    if (unrequested_.count(run_id) && !job.request) {  // nothing of it is written
      cv_.notify_all();                                // for flush()
      continue;
    }
    writing_run_ = run_id;
    writing_record_ = job.request || job.record;
    settled_while_writing_ = false;
    l.unlock();
    write(run_id, std::move(job));
    l.lock();
    writing_run_.clear();
    cv_.notify_all();
  }
}

// The request before the record, so that a stored unfinished record always
// has the request a restarted server resumes it from; a checkpoint last, and
// dropped again when the run was settled while it was written.
void RunStoreWriter::write(const std::string& run_id, Pending p) {
  std::unique_lock<std::mutex> l(mu_, std::defer_lock);
  if (p.request || p.record) {
    bool requested = true;
    Status st = Status::Ok();
    if (p.request) {
      st = store_->save_request(run_id, *p.request);
      requested = st.ok();
      if (!st.ok()) spdlog::warn("{}: its request not saved: {}", run_id, st.message());
      const bool large = carries_inline_rows(*p.request);
      p.request.reset();
      if (large) return_freed_heap();
    }
    if (st.ok() && p.record) {
      st = store_->save(run_id, p.record->seq, p.record->status, p.record->json);
      if (!st.ok())
        spdlog::warn("{}: its {} record not saved: {}", run_id, p.record->status, st.message());
    }
    l.lock();
    writing_record_ = false;
    if (requested)
      unrequested_.erase(run_id);
    else
      unrequested_.insert(run_id);
    const bool settled = settled_while_writing_;
    l.unlock();
    cv_.notify_all();
    if (!st.ok() || settled) return;
  }
  if (!p.checkpoint) return;
  Status st = store_->save_checkpoint(run_id, *p.checkpoint);
  if (!st.ok())
    spdlog::warn("{}: checkpoint after iteration {} not saved: {}", run_id, p.checkpoint->iteration,
                 st.message());
  l.lock();
  const bool settled = settled_while_writing_;
  l.unlock();
  if (settled) (void)store_->drop_checkpoint(run_id);
}

}  // namespace lizard
