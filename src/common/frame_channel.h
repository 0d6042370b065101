// FrameChannel: whole messages ("frames") over one end of a stream socket,
// for a daemon and the helper processes it starts (see child_process.h).
// A frame is an 8-byte little-endian length and that many bytes.  Reads wait
// at most a given time, so that a caller can bound a peer that hangs; a peer
// that closed its end (it exited, or was killed) reads as kUnavailable.
// A wait for the next frame polls first, for about as long as the last one
// took (AdaptiveSpin), then sleeps.
//
// A channel from pair() also has mailboxes (frame_mailbox.h): memory both
// processes map, through which a frame that fits crosses with no system
// call when the receiver is polling.  The socket still carries the large
// frames, the wake-up of a receiver that sleeps, and the peer's end.  Frames
// arrive in the order they were sent: a frame that went by the socket is
// followed by none through the mailbox until a frame comes back (the peer
// read it), and a receiver takes a mailbox frame before a socket frame that
// arrived with it.  Every protocol on these channels is request and reply,
// so the socket is seldom needed for small frames.  The end that made the
// mailboxes sends through them only once a frame came to it that way: a
// helper that does not map them (any program may serve a channel) is still
// spoken to over the socket.
//
//   FrameChannel ch(fd);                         // owns fd from now on
//   LIZARD_RETURN_IF_ERROR(ch.send(request));
//   Result<std::string> reply = ch.receive(/*timeout_ms=*/-1);
//   Status st = ch.receive_into(&buffer, -1);   // every iteration: nothing allocated
//
// Not thread-safe: one thread sends and receives at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/frame_mailbox.h"
#include "common/owned_fd.h"
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

  // A connected pair of channels (socketpair, close-on-exec), sharing
  // mailboxes unless LIZARD_FRAME_MAILBOX=0: first is side 0, second side 1.
  static Result<std::pair<FrameChannel, FrameChannel>> pair();
  // The mailboxes' memfd, for the helper process that will hold the other
  // end (-1 without mailboxes).
  int mailbox_fd() const { return mailboxes_ ? mailboxes_->fd() : -1; }
  // Receives small frames through `m` from now on, as `side`, and sends
  // them there too once `peer_reads` (or once the peer sent one that way).
  void attach_mailboxes(std::shared_ptr<FrameMailboxes> m, int side, bool peer_reads);

  bool open() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  void close();

  // Sends one frame made of `parts` joined, without copying them together.
  Status send(std::string_view frame) { return send_parts(&frame, 1); }
  Status send_parts(const std::string_view* parts, size_t count);
  // As send_parts(), with a copy of descriptor `fd` passed along (a sealed
  // memory file holding a large reply's bytes, common/sealed_memory.h).
  // Such a frame always goes by the socket.
  Status send_with_descriptor(const std::string_view* parts, size_t count, int fd) {
    return send_with_descriptors(parts, count, &fd, 1);
  }
  // As send_parts(), with copies of up to kMaxDescriptors descriptors (the
  // files a run reads, opened by the worker for an executor that may not
  // open them itself).
  Status send_with_descriptors(const std::string_view* parts, size_t count, const int* fds,
                               size_t n);
  static constexpr size_t kMaxDescriptors = 64;
  // The descriptor(s) that came with the frame received last, if any (else
  // -1, or none), in the order they were sent.  Those not taken are closed
  // once the next frame is awaited.
  OwnedFd take_descriptor();
  std::vector<OwnedFd> take_descriptors();
  // Waits up to `timeout_ms` (< 0: for ever) for the next frame.  kUnavailable
  // when the peer closed its end; kCancelled when the time ran out (the part
  // of a length already read is kept for the next call, so that a caller may
  // wait in short slices).
  Result<std::string> receive(int timeout_ms);
  // As receive(), into `out` (resized to the frame), for large frames that
  // their reader keeps as bytes: no copy after the read.
  Status receive_into(std::vector<uint8_t>* out, int timeout_ms);
  // As receive(), into a buffer the caller reuses: a frame no larger than
  // its capacity allocates nothing.
  Status receive_into(std::string* out, int timeout_ms);

  // The next wait for a frame polls for the longest budget: for a frame
  // that comes within an iteration (see AdaptiveSpin::expect_soon).
  void expect_frame_soon() { spin_.expect_soon(); }

  // Frames larger than this are refused on both sides.
  static constexpr uint64_t kMaxFrame = uint64_t{1} << 40;

 private:
  // Reads a frame's body of `n` bytes, polling for the spin budget first.
  Status read_body(char* p, size_t n);
  // Waits for the next frame: true when it is in the mailbox, false when its
  // length was read from the socket (into *size).  A wait that ends part way
  // keeps the bytes of the length read so far for the next call.
  Result<bool> next_frame(int timeout_ms, uint64_t* size);
  // Polls the mailbox (if any) and the socket, then sleeps on the socket;
  // false when the time ran out.  `boxed` says the frame is in the mailbox.
  Result<bool> await_frame(int64_t deadline_ms, bool* boxed);
  template <typename Bytes>
  Status receive_frame(Bytes* out, int timeout_ms);
  // Reads the socket's next length, dropping doorbells; true once it is whole.
  bool socket_length_ready(Status* failed);
  Status mailbox_send(const std::string_view* parts, size_t count, uint64_t total);
  Status socket_send(const std::string_view* parts, size_t count, uint64_t total, const int* fds,
                     size_t n_fds);
  // recv() of the next bytes of a frame's length, keeping a descriptor
  // that comes with them.
  ssize_t receive_length_bytes();
  // The frame in the mailbox, checked against its capacity; release_boxed()
  // hands the slot back once it is copied out.
  Result<std::string_view> boxed_frame() const;
  void release_boxed();

  int fd_ = -1;
  std::shared_ptr<FrameMailboxes> mailboxes_;
  FrameMailbox* out_ = nullptr;  // where this end sends small frames
  FrameMailbox* in_ = nullptr;   // and receives them
  // A frame went by the socket and none came back since: until one does,
  // frames keep to the socket, so that none overtakes it.
  bool socket_frame_unanswered_ = false;
  bool peer_reads_mailbox_ = false;  // the peer looks in its mailbox
  char header_[8] = {};
  size_t header_got_ = 0;              // bytes of the next frame's length read so far
  std::vector<OwnedFd> received_fds_;  // came with the frame being received, or the last one
  bool last_frame_by_socket_ = false;  // ... which came by the socket, not a mailbox
  // How long to poll for the next frame: the waits for a peer's frames tend
  // to repeat (one per iteration), see common/spin_wait.h.
  AdaptiveSpin spin_;
};

}  // namespace lizard
