#include "common/write_fully.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace lizard {

int write_fully(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, std::min(size, kWritePieceBytes));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace lizard
