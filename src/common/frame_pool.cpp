#include "common/frame_pool.h"

#include <utility>

namespace lizard {

std::string FramePool::take() {
  std::string out;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (kept_.empty()) return out;
    out = std::move(kept_.back());
    kept_.pop_back();
    kept_bytes_ -= out.capacity();
  }
  out.clear();
  return out;
}

void FramePool::give(std::string buffer) {
  if (buffer.capacity() < kSmallest || buffer.capacity() > kLargest) return;
  std::lock_guard<std::mutex> l(mu_);
  const size_t bytes = buffer.capacity();
  if (kept_.size() >= kKept || kept_bytes_ + bytes > kKeptBytes) return;
  kept_bytes_ += bytes;
  kept_.push_back(std::move(buffer));
}

size_t FramePool::kept() const {
  std::lock_guard<std::mutex> l(mu_);
  return kept_.size();
}

}  // namespace lizard
