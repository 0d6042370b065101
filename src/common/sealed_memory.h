// SealedMemory: bytes in a memory file (memfd) that one process fills and
// seals against any change, then hands to another process over a socket
// (FrameChannel::send_with_descriptor), which maps them read-only.  A large
// reply, such as a run's output fields on their way from an executor
// process to its worker, then crosses with no copy on the receiving side
// and no trip through the socket's buffers.
//
// The receiver need not trust the sender: map() accepts only a memory file
// sealed against shrinking and writing, of exactly the size announced, so
// that its mapping can neither lose pages under it (a read past a shrunken
// file's end would kill the receiver) nor change while it is read.
//
//   // The sender:
//   auto made = SealedMemory::make(bytes, [&](char* to) { return fill(to); });
//   channel.send_with_descriptor(parts, count, made->fd());   // made closes its fd later
//   // The receiver, with the descriptor that came with the frame:
//   auto mapped = MappedSealedMemory::map(std::move(fd), bytes);
//   std::string_view view = (*mapped)->bytes();   // valid while *mapped lives
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string_view>

#include "common/owned_fd.h"
#include "common/status.h"

namespace lizard {

class SealedMemory {
 public:
  // A memory file of `bytes`, filled by `fill` (given its writable mapping),
  // then unmapped here and sealed.
  static Result<SealedMemory> make(size_t bytes, const std::function<Status(char* to)>& fill);

  int fd() const { return fd_.get(); }
  size_t size() const { return size_; }

 private:
  SealedMemory(OwnedFd fd, size_t size) : fd_(std::move(fd)), size_(size) {}
  OwnedFd fd_;
  size_t size_ = 0;
};

class MappedSealedMemory {
 public:
  // Maps the memory file `fd` (owned from now on) read-only, once it is
  // checked: sealed against shrinking, growing and writing, and of `bytes`.
  static Result<std::shared_ptr<const MappedSealedMemory>> map(OwnedFd fd, size_t bytes);

  MappedSealedMemory(const MappedSealedMemory&) = delete;
  MappedSealedMemory& operator=(const MappedSealedMemory&) = delete;
  ~MappedSealedMemory();

  std::string_view bytes() const { return {data_, size_}; }

 private:
  MappedSealedMemory(const char* data, size_t size) : data_(data), size_(size) {}
  const char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace lizard
