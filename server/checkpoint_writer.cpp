#include "server/checkpoint_writer.h"

#include <spdlog/spdlog.h>

#include <utility>

namespace lizard {

CheckpointWriter::CheckpointWriter(RunStore* store) : store_(store) {
  thread_ = std::thread([this] { write_loop(); });
}

CheckpointWriter::~CheckpointWriter() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void CheckpointWriter::save(const std::string& run_id, RunCheckpoint cp) {
  {
    std::lock_guard<std::mutex> l(mu_);
    pending_[run_id] = std::move(cp);
  }
  cv_.notify_all();
}

void CheckpointWriter::forget(const std::string& run_id) {
  std::lock_guard<std::mutex> writing(write_mu_);  // a write under way ends first
  std::lock_guard<std::mutex> l(mu_);
  pending_.erase(run_id);
}

void CheckpointWriter::flush() {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [this] { return pending_.empty() && !writing_; });
}

// Takes everything pending at once and writes it; stops once nothing is
// pending after stop was asked for.
void CheckpointWriter::write_loop() {
  for (;;) {
    std::unique_lock<std::mutex> writing(write_mu_, std::defer_lock);
    std::map<std::string, RunCheckpoint> batch;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [this] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;  // stopping, with nothing left
      l.unlock();
      writing.lock();  // before taking the batch: forget() then sees it gone or written
      l.lock();
      batch.swap(pending_);
      writing_ = true;
    }
    for (const auto& [run_id, cp] : batch) {
      Status st = store_->save_checkpoint(run_id, cp);
      if (!st.ok())
        spdlog::warn("{}: checkpoint after iteration {} not saved: {}", run_id, cp.iteration,
                     st.message());
    }
    writing.unlock();
    {
      std::lock_guard<std::mutex> l(mu_);
      writing_ = false;
    }
    cv_.notify_all();
  }
}

}  // namespace lizard
