#include "runlog/output_pipe.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace lizard {
namespace {

// How often the reader looks whether it is to stop.
constexpr int kStopPollMs = 100;

}  // namespace

OutputPipe::OutputPipe(int fd) : fd_(fd) {
  if (fd_ < 0) return;
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
  reader_ = std::thread([this] { read_loop(); });
}

OutputPipe::~OutputPipe() {
  stop_ = true;
  if (reader_.joinable()) reader_.join();
  if (fd_ >= 0) ::close(fd_);
}

OutputPipe::Taken OutputPipe::take() {
  std::lock_guard<std::mutex> l(mu_);
  if (fd_ >= 0) drain_locked();
  Taken t;
  t.bytes.swap(held_);
  t.dropped = dropped_;
  dropped_ = 0;
  return t;
}

void OutputPipe::read_loop() {
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, kStopPollMs);
    if (r <= 0) continue;
    if (p.revents & (POLLERR | POLLNVAL)) return;  // nothing more will come
    std::lock_guard<std::mutex> l(mu_);
    drain_locked();
    if (closed_) return;
  }
}

void OutputPipe::drain_locked() {
  char buf[65536];
  while (!closed_) {
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;  // EAGAIN: empty for now
    if (n == 0) {
      closed_ = true;
      return;
    }
    const size_t room = kHeldBytes - std::min(kHeldBytes, held_.size());
    const size_t kept = std::min(room, static_cast<size_t>(n));
    held_.append(buf, kept);
    dropped_ += static_cast<uint64_t>(n) - kept;
  }
}

}  // namespace lizard
