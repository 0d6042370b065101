#include "dataset/beneath_open.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#endif

#include <cerrno>
#include <cstring>
#include <sstream>
#include <utility>
#include <vector>

namespace lizard {

namespace {

constexpr int kFileFlags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;

// A descriptor closed when it goes out of scope.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int release() { return std::exchange(fd, -1); }
};

Status refused_link(const std::string& path) {
  return permission_denied("cannot open " + path +
                           ": a symlink in it changed after it was checked against the data roots");
}

Status open_error(const std::string& path, int err) {
  if (err == ELOOP || err == EXDEV) return refused_link(path);
  return invalid_argument("cannot open " + path + ": " + std::strerror(err));
}

std::vector<std::string> components(const std::string& relative) {
  std::vector<std::string> out;
  std::stringstream in(relative);
  for (std::string part; std::getline(in, part, '/');)
    if (!part.empty()) out.push_back(part);
  return out;
}

// -1 with errno ENOSYS where the kernel (or a seccomp filter) lacks openat2.
int open_with_openat2(int dir, const std::string& relative) {
#if defined(SYS_openat2) && defined(RESOLVE_BENEATH)
  open_how how{};
  how.flags = kFileFlags;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  long fd;
  int tries = 0;  // EAGAIN: a rename raced the lookup; a few more tries settle it
  do {
    fd = ::syscall(SYS_openat2, dir, relative.c_str(), &how, sizeof how);
  } while (fd < 0 && (errno == EINTR || (errno == EAGAIN && ++tries < 8)));
  if (fd < 0 && errno == EPERM) errno = ENOSYS;  // a seccomp filter's answer
  return static_cast<int>(fd);
#else
  (void)dir;
  (void)relative;
  errno = ENOSYS;
  return -1;
#endif
}

// Each directory with O_NOFOLLOW | O_DIRECTORY, the file with O_NOFOLLOW:
// a symlink anywhere fails with ELOOP or ENOTDIR.
int open_by_components(int dir, const std::vector<std::string>& parts) {
  Fd cur(::fcntl(dir, F_DUPFD_CLOEXEC, 0));
  if (cur.fd < 0) return -1;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    Fd next(::openat(cur.fd, parts[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (next.fd < 0) {
      struct stat st;
      if (errno == ENOTDIR && ::fstatat(cur.fd, parts[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISLNK(st.st_mode))
        errno = ELOOP;
      return -1;
    }
    std::swap(cur.fd, next.fd);
  }
  int fd;
  do {
    fd = ::openat(cur.fd, parts.back().c_str(), kFileFlags | O_NOFOLLOW);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

}  // namespace

Result<InputFile> open_beneath(const std::string& dir, const std::string& relative,
                               BeneathMethod method, const std::string& name) {
  const std::string path = name.empty() ? dir + "/" + relative : name;
  const std::vector<std::string> parts = components(relative);
  if (parts.empty() || relative.front() == '/')
    return invalid_argument("cannot open " + path + ": not a file below " + dir);
  for (const auto& p : parts)
    if (p == "." || p == "..") return refused_link(path);
  Fd root(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root.fd < 0) return invalid_argument("cannot open " + dir + ": " + std::strerror(errno));
  int fd = -1;
  if (method == BeneathMethod::kBest) fd = open_with_openat2(root.fd, relative);
  if (method == BeneathMethod::kComponentWalk || (fd < 0 && errno == ENOSYS))
    fd = open_by_components(root.fd, parts);
  if (fd < 0) return open_error(path, errno);
  return InputFile::adopt(path, fd);
}

}  // namespace lizard
