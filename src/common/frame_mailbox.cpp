#include "common/frame_mailbox.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace lizard {
namespace {

constexpr size_t kBytes = 2 * sizeof(FrameMailbox);

bool turned_off() {
  const char* v = std::getenv("LIZARD_FRAME_MAILBOX");
  return v && std::string(v) == "0";
}

Result<void*> map_fd(int fd) {
  void* p = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return internal_error(std::string("mmap: ") + std::strerror(errno));
  return p;
}

}  // namespace

FrameMailboxes::~FrameMailboxes() {
  ::munmap(base_, kBytes);
  ::close(fd_);
}

Result<std::shared_ptr<FrameMailboxes>> FrameMailboxes::create() {
  if (turned_off()) return std::shared_ptr<FrameMailboxes>();
  const int made = ::memfd_create(kName, MFD_CLOEXEC);
  if (made < 0) return internal_error(std::string("memfd_create: ") + std::strerror(errno));
  // Above the descriptors a helper is given (3 and 4), so that handing it
  // this one at 4 never overwrites the one it gets at 3 first.
  const int fd = ::fcntl(made, F_DUPFD_CLOEXEC, 10);
  ::close(made);
  if (fd < 0) return internal_error(std::string("fcntl: ") + std::strerror(errno));
  if (::ftruncate(fd, static_cast<off_t>(kBytes)) != 0) {
    const int e = errno;
    ::close(fd);
    return internal_error(std::string("ftruncate: ") + std::strerror(e));
  }
  auto base = map_fd(fd);
  if (!base.ok()) {
    ::close(fd);
    return base.status();
  }
  // The memfd reads as zeros: construct the slots in place once, here.
  auto* slots = static_cast<FrameMailbox*>(*base);
  new (&slots[0]) FrameMailbox;
  new (&slots[1]) FrameMailbox;
  return std::shared_ptr<FrameMailboxes>(new FrameMailboxes(fd, *base));
}

Result<std::shared_ptr<FrameMailboxes>> FrameMailboxes::map(int fd) {
  auto base = map_fd(fd);
  if (!base.ok()) {
    ::close(fd);
    return base.status();
  }
  return std::shared_ptr<FrameMailboxes>(new FrameMailboxes(fd, *base));
}

FrameMailboxes::Side FrameMailboxes::side(int which) const {
  auto* slots = static_cast<FrameMailbox*>(base_);
  return which == 0 ? Side{&slots[0], &slots[1]} : Side{&slots[1], &slots[0]};
}

}  // namespace lizard
