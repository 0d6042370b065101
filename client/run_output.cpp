#include "client/run_output.h"

#include <spdlog/spdlog.h>

#include "runlog/output_lines.h"

namespace lizard {
namespace {

// A log_chunk is sent before its text passes this, so that no frame grows
// large however much a run prints.
constexpr uint64_t kChunkBytes = 256 << 10;

}  // namespace

void RunOutput::bind(std::string run_id, std::function<void(std::string frame)> send) {
  std::lock_guard<std::mutex> l(mu_);
  run_id_ = std::move(run_id);
  send_ = std::move(send);
  bound_ = OutputBound(kRunOutputBytes);
  pending_ = LogChunkMsg{};
  pending_bytes_ = 0;
}

void RunOutput::collect(OwnerProcessExecutor* process, int64_t executor, int64_t iteration) {
  if (process != nullptr) add(executor, iteration, process->take_output());
}

void RunOutput::add(int64_t executor, int64_t iteration, const OutputPipe::Taken& taken) {
  if (taken.bytes.empty() && taken.dropped == 0) return;
  std::lock_guard<std::mutex> l(mu_);
  OutputLines lines;
  auto keep = [&](std::string text) {
    const uint64_t bytes = text.size() + 1;
    if (!bound_.admit(bytes)) return;
    pending_.lines.push_back({executor, iteration, std::move(text)});
    pending_bytes_ += bytes;
    if (pending_bytes_ >= kChunkBytes) send_pending();
  };
  lines.add(taken.bytes, keep);
  lines.finish(keep);
  if (taken.dropped > 0) bound_.add_cut(1, taken.dropped);
}

void RunOutput::flush() {
  std::lock_guard<std::mutex> l(mu_);
  if (!pending_.lines.empty()) send_pending();
}

void RunOutput::finish() {
  std::lock_guard<std::mutex> l(mu_);
  pending_.cut_lines = bound_.cut_lines();
  pending_.cut_bytes = bound_.cut_bytes();
  if (!pending_.lines.empty() || pending_.cut_lines > 0) send_pending();
  bound_ = OutputBound(kRunOutputBytes);
}

void RunOutput::send_pending() {
  pending_.run_id = run_id_;
  if (send_ && !run_id_.empty()) send_(encode(pending_.to_message()));
  pending_ = LogChunkMsg{};
  pending_bytes_ = 0;
}

void log_output_outside_runs(OwnerProcessExecutor* process, int64_t executor) {
  if (process == nullptr) return;
  OutputPipe::Taken taken = process->take_output();
  log_lines_of(taken.bytes,
               [&](std::string text) { spdlog::info("executor {} printed: {}", executor, text); });
  if (taken.dropped > 0)
    spdlog::info("executor {} printed {} more bytes, not kept", executor, taken.dropped);
}

}  // namespace lizard
