// FrameMailboxes: two one-frame slots, one per direction, in memory that a
// daemon and a helper process both map (a memfd the helper inherits), so
// that a small frame crosses between them without a system call: the sender
// copies it in and bumps a counter, the receiver, polling, sees the counter
// move.  FrameChannel (frame_channel.h) uses them for the frames that fit,
// when the slot is free, and keeps its socket for everything else: large
// frames, waking a receiver that sleeps, and noticing that the peer is gone.
//
//   auto m = FrameMailboxes::create();            // in the daemon; m->fd() goes to the helper
//   auto h = FrameMailboxes::map(fd);             // in the helper
//   FrameMailbox* out = m->side(0).out;           // the daemon sends here ...
//   FrameMailbox* in = (*h)->side(1).in;          // ... and the helper receives it here
//
// Nothing in the slots is trusted: a receiver checks a frame's size against
// the slot before it copies it out.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>

#include "common/status.h"

namespace lizard {

// One direction's slot.  A frame is in it while published != taken.
struct FrameMailbox {
  static constexpr uint64_t kCapacity = uint64_t{1} << 20;  // bytes of frame

  alignas(64) std::atomic<uint64_t> published{0};  // frames the sender put in
  alignas(64) std::atomic<uint64_t> taken{0};      // frames the receiver took out
  // Set by a receiver about to sleep on the socket: the sender then rings
  // (sends a doorbell frame on the socket) after putting a frame in.
  alignas(64) std::atomic<uint32_t> receiver_asleep{0};
  uint64_t size = 0;  // of the frame in the slot
  alignas(64) char bytes[kCapacity];

  bool full() const {
    return published.load(std::memory_order_acquire) != taken.load(std::memory_order_acquire);
  }
};

static_assert(std::atomic<uint64_t>::is_always_lock_free, "mailboxes need lock-free atomics");

class FrameMailboxes {
 public:
  // The memfd's name: a helper's /proc/self/fd/N link starts "/memfd:" and this.
  static constexpr const char* kName = "lizard-frames";

  // One side's view: where it sends and where it receives.
  struct Side {
    FrameMailbox* out;
    FrameMailbox* in;
  };

  ~FrameMailboxes();
  FrameMailboxes(const FrameMailboxes&) = delete;
  FrameMailboxes& operator=(const FrameMailboxes&) = delete;

  // A fresh pair of empty slots in a memfd (close-on-exec).  Null where
  // mailboxes are turned off (LIZARD_FRAME_MAILBOX=0).
  static Result<std::shared_ptr<FrameMailboxes>> create();
  // Maps the slots another process created (fd from create()'s fd()); owns fd.
  static Result<std::shared_ptr<FrameMailboxes>> map(int fd);

  int fd() const { return fd_; }
  // Side 0 sends in slot 0 and receives in slot 1; side 1 the other way.
  Side side(int which) const;

 private:
  FrameMailboxes(int fd, void* base) : fd_(fd), base_(base) {}

  int fd_;
  void* base_;
};

}  // namespace lizard
