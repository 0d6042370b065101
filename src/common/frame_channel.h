// FrameChannel: whole messages ("frames") over one end of a stream socket,
// for a daemon and the helper processes it starts (see child_process.h).
// A frame is an 8-byte little-endian length and that many bytes.  Reads wait
// at most a given time, so that a caller can bound a peer that hangs; a peer
// that closed its end (it exited, or was killed) reads as kUnavailable.
// A wait for the next frame polls first, for about as long as the last one
// took (AdaptiveSpin), then sleeps.
//
//   FrameChannel ch(fd);                         // owns fd from now on
//   LIZARD_RETURN_IF_ERROR(ch.send(request));
//   Result<std::string> reply = ch.receive(/*timeout_ms=*/-1);
//
// Not thread-safe: one thread sends and receives at a time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/spin_wait.h"
#include "common/status.h"

namespace lizard {

class FrameChannel {
 public:
  FrameChannel() = default;
  explicit FrameChannel(int fd) : fd_(fd) {}
  ~FrameChannel();
  FrameChannel(FrameChannel&& o) noexcept { *this = std::move(o); }
  FrameChannel& operator=(FrameChannel&& o) noexcept;
  FrameChannel(const FrameChannel&) = delete;
  FrameChannel& operator=(const FrameChannel&) = delete;

  // A connected pair of channels (socketpair, close-on-exec).
  static Result<std::pair<FrameChannel, FrameChannel>> pair();

  bool open() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  void close();

  // Sends one frame made of `parts` joined, without copying them together.
  Status send(std::string_view frame) { return send_parts(&frame, 1); }
  Status send_parts(const std::string_view* parts, size_t count);
  // Waits up to `timeout_ms` (< 0: for ever) for the next frame.  kUnavailable
  // when the peer closed its end; kCancelled when the time ran out (the part
  // of a length already read is kept for the next call, so that a caller may
  // wait in short slices).
  Result<std::string> receive(int timeout_ms);
  // As receive(), into `out` (resized to the frame), for large frames that
  // their reader keeps as bytes: no copy after the read.
  Status receive_into(std::vector<uint8_t>* out, int timeout_ms);

  // Frames larger than this are refused on both sides.
  static constexpr uint64_t kMaxFrame = uint64_t{1} << 40;

 private:
  // Adds the bytes it read to `*done` when given, also when it gives up.
  // Polls for `spin_us` first (< 0: the process's budget).
  Status read_exact(char* p, size_t n, int64_t deadline_ms, size_t* done = nullptr,
                    int64_t spin_us = -1);
  Result<uint64_t> receive_length(int timeout_ms);

  int fd_ = -1;
  char header_[8] = {};
  size_t header_got_ = 0;  // bytes of the next frame's length read so far
  // How long to poll for the next frame: the waits for a peer's frames tend
  // to repeat (one per iteration), see common/spin_wait.h.
  AdaptiveSpin spin_;
};

}  // namespace lizard
