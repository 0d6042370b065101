#include "server/durable_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace lizard {
namespace {
std::atomic<int> g_failing_writes{0};
}  // namespace

Status write_file_durably(const std::string& path, const std::string& bytes,
                          const std::string& what) {
  if (storage_write_fails()) return disk_full_error(what);
  static std::atomic<uint64_t> counter{0};
  const std::string tmp =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == ENOSPC || errno == EDQUOT) return disk_full_error(what);
    return internal_error("cannot create " + tmp + ": " + std::strerror(errno));
  }
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
  Status st;
  if (left > 0 || ::fsync(fd) != 0)
    st = errno == ENOSPC || errno == EDQUOT
             ? disk_full_error(what)
             : internal_error("cannot write " + tmp + ": " + std::strerror(errno));
  ::close(fd);
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0)
    st = internal_error("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
  if (!st.ok()) ::unlink(tmp.c_str());
  return st;
}

void fail_next_storage_writes(int n) {
  g_failing_writes = n;
}

bool storage_write_fails() {
  static const char* flag_file = std::getenv("LIZARD_TEST_DISK_FULL_FILE");
  if (flag_file && *flag_file) {
    struct stat st;
    if (::stat(flag_file, &st) == 0) return true;
  }
  int n = g_failing_writes.load();
  while (n > 0)
    if (g_failing_writes.compare_exchange_weak(n, n - 1)) return true;
  return false;
}

Status disk_full_error(const std::string& what) {
  return storage_full("the server's disk is full: " + what +
                      " was not stored (free space in its --state-dir and try again)");
}

}  // namespace lizard
