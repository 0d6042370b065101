#include "common/frame_channel.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <utility>
#include <vector>

#include "common/spin_wait.h"

namespace lizard {
namespace {

constexpr int kSocketBufferBytes = 4 << 20;
// A length that announces no frame: the sender put one in the mailbox of a
// receiver that was going to sleep.
constexpr uint64_t kDoorbell = ~uint64_t{0};

int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

void put_le64(uint64_t v, char* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

uint64_t get_le64(const char* in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<unsigned char>(in[i])} << (8 * i);
  return v;
}

}  // namespace

FrameChannel::~FrameChannel() {
  close();
}

FrameChannel& FrameChannel::operator=(FrameChannel&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    std::memcpy(header_, o.header_, sizeof header_);
    header_got_ = o.header_got_;
    spin_ = o.spin_;
    mailboxes_ = std::move(o.mailboxes_);
    out_ = o.out_;
    in_ = o.in_;
    socket_frame_unanswered_ = o.socket_frame_unanswered_;
    peer_reads_mailbox_ = o.peer_reads_mailbox_;
    received_fds_ = std::move(o.received_fds_);
    last_frame_by_socket_ = o.last_frame_by_socket_;
    o.fd_ = -1;
    o.header_got_ = 0;
    o.out_ = o.in_ = nullptr;
  }
  return *this;
}

void FrameChannel::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  header_got_ = 0;
  received_fds_.clear();
  mailboxes_.reset();
  out_ = in_ = nullptr;
}

void FrameChannel::attach_mailboxes(std::shared_ptr<FrameMailboxes> m, int side, bool peer_reads) {
  mailboxes_ = std::move(m);
  peer_reads_mailbox_ = peer_reads;
  out_ = in_ = nullptr;
  if (!mailboxes_) return;
  const FrameMailboxes::Side s = mailboxes_->side(side);
  out_ = s.out;
  in_ = s.in;
}

Result<std::pair<FrameChannel, FrameChannel>> FrameChannel::pair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return internal_error(std::string("socketpair: ") + std::strerror(errno));
  }
  // Large buffers (as far as net.core.[rw]mem_max allow): a partition's rows
  // cross in a few large writes rather than many that each wait for the reader.
  for (int fd : fds) {
    int bytes = kSocketBufferBytes;
    (void)::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
    (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
  }
  auto ends = std::make_pair(FrameChannel(fds[0]), FrameChannel(fds[1]));
  LIZARD_ASSIGN_OR_RETURN(std::shared_ptr<FrameMailboxes> boxes, FrameMailboxes::create());
  ends.first.attach_mailboxes(boxes, 0, false);
  ends.second.attach_mailboxes(boxes, 1, true);
  return ends;
}

Status FrameChannel::send_parts(const std::string_view* parts, size_t count) {
  if (fd_ < 0) return unavailable("the channel is closed");
  uint64_t total = 0;
  for (size_t i = 0; i < count; ++i) total += parts[i].size();
  if (out_) {
    if (peer_reads_mailbox_ && total <= FrameMailbox::kCapacity && !socket_frame_unanswered_ &&
        !out_->full())
      return mailbox_send(parts, count, total);
    socket_frame_unanswered_ = true;
  }
  return socket_send(parts, count, total, nullptr, 0);
}

Status FrameChannel::send_with_descriptors(const std::string_view* parts, size_t count,
                                           const int* fds, size_t n) {
  if (fd_ < 0) return unavailable("the channel is closed");
  if (n > kMaxDescriptors)
    return invalid_argument(std::to_string(n) + " descriptors with one frame; at most " +
                            std::to_string(kMaxDescriptors));
  uint64_t total = 0;
  for (size_t i = 0; i < count; ++i) total += parts[i].size();
  if (out_) socket_frame_unanswered_ = true;
  return socket_send(parts, count, total, fds, n);
}

Status FrameChannel::socket_send(const std::string_view* parts, size_t count, uint64_t total,
                                 const int* fds, size_t n_fds) {
  char header[8];
  put_le64(total, header);
  // On the stack for the few parts of the frames of every iteration.
  constexpr size_t kFew = 8;
  iovec few[kFew];
  std::vector<iovec> many;
  iovec* iov = few;
  if (count + 1 > kFew) {
    many.resize(count + 1);
    iov = many.data();
  }
  size_t n_iov = 0;
  iov[n_iov++] = {header, sizeof header};
  for (size_t i = 0; i < count; ++i) {
    if (!parts[i].empty()) iov[n_iov++] = {const_cast<char*>(parts[i].data()), parts[i].size()};
  }
  // The descriptors ride with the frame's first byte (its length's).
  alignas(cmsghdr) char control[CMSG_SPACE(kMaxDescriptors * sizeof(int))] = {};
  size_t first = 0;
  while (first < n_iov) {
    msghdr msg{};
    msg.msg_iov = iov + first;
    msg.msg_iovlen = std::min<size_t>(n_iov - first, IOV_MAX);
    if (n_fds > 0) {
      msg.msg_control = control;
      msg.msg_controllen = CMSG_SPACE(n_fds * sizeof(int));
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(n_fds * sizeof(int));
      std::memcpy(CMSG_DATA(c), fds, n_fds * sizeof(int));
    }
    ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return unavailable(std::string("the peer closed the channel: ") + std::strerror(errno));
    }
    n_fds = 0;  // sent with the bytes just written
    size_t left = static_cast<size_t>(n);
    while (first < n_iov && left >= iov[first].iov_len) left -= iov[first++].iov_len;
    if (first < n_iov) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return Status::Ok();
}

Status FrameChannel::read_body(char* p, size_t n) {
  // Polls for the spin budget first: bytes that arrive meanwhile are taken
  // without the wake-up a blocking wait would cost.
  if (n > 0) {
    ssize_t got = -1;
    spin_until([&] {
      got = ::recv(fd_, p, n, MSG_DONTWAIT);
      return got >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
    });
    if (got == 0) return unavailable("the peer closed the channel");
    if (got > 0) {
      p += got;
      n -= static_cast<size_t>(got);
    }  // else: nothing yet, or an error the reads below report
  }
  while (n > 0) {
    const ssize_t got = ::read(fd_, p, n);
    if (got > 0) {
      p += got;
      n -= static_cast<size_t>(got);
      continue;
    }
    if (got == 0) return unavailable("the peer closed the channel");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return unavailable(std::string("the peer closed the channel: ") + std::strerror(errno));
    pollfd pfd{fd_, POLLIN, 0};  // a non-blocking descriptor: wait for the bytes
    if (::poll(&pfd, 1, -1) < 0 && errno != EINTR)
      return internal_error(std::string("poll: ") + std::strerror(errno));
  }
  return Status::Ok();
}

Status FrameChannel::mailbox_send(const std::string_view* parts, size_t count, uint64_t total) {
  char* p = out_->bytes;
  for (size_t i = 0; i < count; ++i) {
    if (!parts[i].empty()) std::memcpy(p, parts[i].data(), parts[i].size());
    p += parts[i].size();
  }
  out_->size = total;
  out_->published.store(out_->published.load(std::memory_order_relaxed) + 1,
                        std::memory_order_seq_cst);
  // Pairs with the receiver's fence between raising its flag and looking in
  // the mailbox: one of the two sees the other's store.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (out_->receiver_asleep.load(std::memory_order_seq_cst) == 0) return Status::Ok();
  char bell[8];
  put_le64(kDoorbell, bell);
  for (;;) {
    const ssize_t n = ::send(fd_, bell, sizeof bell, MSG_NOSIGNAL);
    if (n == static_cast<ssize_t>(sizeof bell)) return Status::Ok();
    if (n < 0 && errno == EINTR) continue;
    // A stream socket takes 8 bytes whole or not at all, short of an error.
    return unavailable(std::string("the peer closed the channel: ") + std::strerror(errno));
  }
}

bool FrameChannel::socket_length_ready(Status* failed) {
  for (;;) {
    if (header_got_ == sizeof header_) {
      if (get_le64(header_) != kDoorbell) return true;
      header_got_ = 0;  // a doorbell: a wake-up, not a frame
    }
    const ssize_t got = receive_length_bytes();
    if (got > 0) {
      header_got_ += static_cast<size_t>(got);
      continue;
    }
    if (got == 0) {
      *failed = unavailable("the peer closed the channel");
      return true;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      *failed = unavailable(std::string("the peer closed the channel: ") + std::strerror(errno));
      return true;
    }
    return false;
  }
}

ssize_t FrameChannel::receive_length_bytes() {
  iovec iov{header_ + header_got_, sizeof header_ - header_got_};
  // Room for as many as a frame may carry; more are cut off by the kernel.
  alignas(cmsghdr) char control[CMSG_SPACE(kMaxDescriptors * sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  const ssize_t got = ::recvmsg(fd_, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (got <= 0) return got;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      received_fds_.emplace_back(fd);
    }
  }
  return got;
}

Result<bool> FrameChannel::await_frame(int64_t deadline_ms, bool* boxed) {
  Status failed;
  auto mailbox_full = [&] { return in_ && in_->full() && (*boxed = true); };
  auto ready = [&] {
    // The mailbox first: a frame there was sent before any socket frame
    // that is readable with it.
    if (mailbox_full()) return true;
    // After a doorbell, the frame it rang for is in the mailbox.
    if (!socket_length_ready(&failed)) return mailbox_full();
    mailbox_full();  // put in before the socket frame was written: it goes first
    return true;
  };
  auto set_asleep = [&](uint32_t asleep) {
    if (!in_) return;
    in_->receiver_asleep.store(asleep, std::memory_order_seq_cst);
    // Pairs with the sender's fence between putting a frame in and looking
    // at the flag: one of the two sees the other's store.
    std::atomic_thread_fence(std::memory_order_seq_cst);
  };
  bool done = spin_until(ready, spin_.budget_us());
  while (!done) {
    set_asleep(1);
    done = ready();  // a frame put in before the sender saw the flag
    if (!done) {
      int wait = -1;
      if (deadline_ms >= 0) {
        const int64_t left = deadline_ms - now_ms();
        if (left <= 0) {
          set_asleep(0);
          return false;
        }
        wait = static_cast<int>(std::min<int64_t>(left, 1 << 30));
      }
      pollfd pfd{fd_, POLLIN, 0};
      if (::poll(&pfd, 1, wait) < 0 && errno != EINTR)
        failed = internal_error(std::string("poll: ") + std::strerror(errno));
      done = !failed.ok() || ready();
    }
    set_asleep(0);
  }
  if (*boxed) return true;
  LIZARD_RETURN_IF_ERROR(failed);
  return true;
}

Result<bool> FrameChannel::next_frame(int timeout_ms, uint64_t* size) {
  if (fd_ < 0) return unavailable("the channel is closed");
  // No byte of the next frame came yet, so neither did its descriptor.
  if (header_got_ == 0) received_fds_.clear();
  const auto t0 = std::chrono::steady_clock::now();
  bool boxed = false;
  auto came = await_frame(timeout_ms < 0 ? -1 : now_ms() + timeout_ms, &boxed);
  // A wait that ran out of time saw no frame: the peer is idle, or slow.
  spin_.waited_us(came.ok() && !*came ? INT64_MAX
                                      : std::chrono::duration_cast<std::chrono::microseconds>(
                                            std::chrono::steady_clock::now() - t0)
                                            .count());
  LIZARD_RETURN_IF_ERROR(came.status());
  if (!*came) return Status(Code::kCancelled, "no answer in time");
  socket_frame_unanswered_ = false;
  last_frame_by_socket_ = !boxed;
  if (boxed) return true;
  header_got_ = 0;
  *size = get_le64(header_);
  if (*size > kMaxFrame) return internal_error("a frame of " + std::to_string(*size) + " bytes");
  return false;
}

OwnedFd FrameChannel::take_descriptor() {
  std::vector<OwnedFd> all = take_descriptors();
  return all.empty() ? OwnedFd() : std::move(all.front());
}

std::vector<OwnedFd> FrameChannel::take_descriptors() {
  if (!last_frame_by_socket_) return {};
  return std::exchange(received_fds_, {});
}

Result<std::string_view> FrameChannel::boxed_frame() const {
  const uint64_t size = in_->size;
  if (size > FrameMailbox::kCapacity)
    return internal_error("a mailbox frame of " + std::to_string(size) + " bytes");
  return std::string_view(in_->bytes, size);
}

void FrameChannel::release_boxed() {
  peer_reads_mailbox_ = true;  // it writes there, so it reads there
  in_->taken.store(in_->published.load(std::memory_order_acquire), std::memory_order_release);
}

template <typename Bytes>
Status FrameChannel::receive_frame(Bytes* out, int timeout_ms) {
  uint64_t size = 0;
  LIZARD_ASSIGN_OR_RETURN(bool boxed, next_frame(timeout_ms, &size));
  if (boxed) {
    LIZARD_ASSIGN_OR_RETURN(std::string_view frame, boxed_frame());
    out->assign(frame.begin(), frame.end());
    release_boxed();
    return Status::Ok();
  }
  out->resize(size);
  // Once a frame has begun, its body follows at once: wait for all of it.
  return read_body(reinterpret_cast<char*>(out->data()), out->size());
}

Status FrameChannel::receive_into(std::vector<uint8_t>* out, int timeout_ms) {
  return receive_frame(out, timeout_ms);
}

Status FrameChannel::receive_into(std::string* out, int timeout_ms) {
  return receive_frame(out, timeout_ms);
}

Result<std::string> FrameChannel::receive(int timeout_ms) {
  std::string frame;
  LIZARD_RETURN_IF_ERROR(receive_frame(&frame, timeout_ms));
  return frame;
}

}  // namespace lizard
