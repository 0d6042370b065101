#include "server/durable_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/write_fully.h"

namespace lizard {
namespace {
std::atomic<int> g_failing_writes{0};

// Writeback of what is written starts every this many bytes, so that the
// fsync at the end waits for the last of them alone rather than for the
// whole file: a run's record and its 67 MB field were stored in 32-35 ms
// this way against 49-76 ms before (docs/benchmarks-history.md, user_data).
constexpr size_t kWritebackBytes = size_t{8} << 20;

// Writes `data` at the file's end, which is at `*written`, starting each
// kWritebackBytes' writeback on the way; 0 or the errno of what failed.
int write_with_writeback(int fd, std::string_view data, size_t* written) {
  while (!data.empty()) {
    const size_t n = std::min(data.size(), kWritebackBytes - *written % kWritebackBytes);
    if (int err = write_fully(fd, data.data(), n)) return err;
    *written += n;
    data.remove_prefix(n);
    if (*written % kWritebackBytes == 0)  // a hint: a failure shows in the fsync
      (void)::sync_file_range(fd, static_cast<off_t>(*written - kWritebackBytes),
                              static_cast<off_t>(kWritebackBytes), SYNC_FILE_RANGE_WRITE);
  }
  return 0;
}

}  // namespace

Status write_file_durably(const std::string& path, const std::string& bytes,
                          const std::string& what) {
  const std::string_view whole = bytes;
  return write_file_durably(path, &whole, 1, what);
}

Status write_file_durably(const std::string& path, const std::string_view* parts, size_t count,
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
  int err = 0;
  size_t written = 0;
  for (size_t i = 0; i < count && err == 0; ++i) err = write_with_writeback(fd, parts[i], &written);
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  Status st;
  if (err != 0)
    st = err == ENOSPC || err == EDQUOT
             ? disk_full_error(what)
             : internal_error("cannot write " + tmp + ": " + std::strerror(err));
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
