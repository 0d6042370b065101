// FramePool: the buffers of outgoing frames, given back once written and
// taken again for the next frame, so that a daemon that sends a frame every
// iteration does not allocate one every iteration.  A pool keeps a few
// buffers of moderate size; larger ones, and any beyond the few, are freed.
// Thread-safe: a run's session takes buffers on its thread, and the
// connection gives them back on its io thread (net/outgoing_frame.h).
//
//   std::string frame = pool->take();       // empty, with a capacity from earlier frames
//   msg.encode_into(&frame, payload, 2);
//   connection->send(std::move(frame));      // written, then given back to the pool
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

namespace lizard {

class FramePool {
 public:
  FramePool() { kept_.reserve(kKept); }
  FramePool(const FramePool&) = delete;
  FramePool& operator=(const FramePool&) = delete;

  // An empty string, with the capacity of a buffer given back earlier if any.
  std::string take();
  // Keeps `buffer` for a later take(), unless it is too small or too large
  // to be worth keeping, or the pool is full.
  void give(std::string buffer);
  size_t kept() const;

  static constexpr size_t kKept = 16;
  static constexpr size_t kSmallest = 64;          // below this, a buffer is not worth keeping
  static constexpr size_t kLargest = 4u << 20;     // above this, one is freed
  static constexpr size_t kKeptBytes = 16u << 20;  // the most the kept buffers hold together

 private:
  mutable std::mutex mu_;
  std::vector<std::string> kept_;  // GUARDED_BY(mu_); reserved, so pushes allocate nothing
  size_t kept_bytes_ = 0;          // GUARDED_BY(mu_): their capacities
};

}  // namespace lizard
