#include "common/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lizard {
namespace {

Status open_failure(const std::string& path, int err) {
  const std::string message = "cannot open " + path + ": " + std::strerror(err);
  return err == ENOENT ? not_found(message) : invalid_argument(message);
}

}  // namespace

// Opened with O_NONBLOCK: open() of a FIFO with no writer would otherwise
// wait for one.  The flag is dropped once the file is known to be regular.
Result<int> open_regular_file(const std::string& path) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return open_failure(path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return open_failure(path, err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument("cannot open " + path + ": " +
                            (S_ISDIR(st.st_mode) ? std::strerror(EISDIR) : "not a regular file"));
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

Result<std::string> read_regular_file(const std::string& path) {
  LIZARD_ASSIGN_OR_RETURN(int fd, open_regular_file(path));
  std::string bytes;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      bytes.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      const int err = errno;
      ::close(fd);
      return internal_error("cannot read " + path + ": " + std::strerror(err));
    }
  }
  ::close(fd);
  return bytes;
}

bool regular_file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace lizard
