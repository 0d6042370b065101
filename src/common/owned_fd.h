// OwnedFd: a file descriptor that is closed when its owner goes, for
// descriptors handed between functions (one received with a frame, say).
//
//   OwnedFd fd(::memfd_create("x", MFD_CLOEXEC));
//   if (fd.get() < 0) ...;
//   take(std::move(fd));       // closed by whoever holds it last
#pragma once

namespace lizard {

// A descriptor closed when it goes.
class OwnedFd {
 public:
  OwnedFd() = default;
  explicit OwnedFd(int fd) : fd_(fd) {}
  OwnedFd(OwnedFd&& o) noexcept : fd_(o.release()) {}
  OwnedFd& operator=(OwnedFd&& o) noexcept;
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  ~OwnedFd() { reset(); }

  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset();

 private:
  int fd_ = -1;
};

}  // namespace lizard
