#include "client/upload_rows.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace lizard {

namespace {

Status system_error(const std::string& what) {
  return internal_error("uploaded rows: " + what + ": " + std::strerror(errno));
}

constexpr const char* kShmDir = "/dev/shm";
constexpr const char* kPrefix = "lizard-rows-";

// A new file of this process's in /dev/shm (its path in *path), or a memfd
// where there is no /dev/shm (*path then stays empty).
int open_rows_file(std::string* path) {
  static std::atomic<unsigned long> counter{0};
  const std::string named = std::string(kShmDir) + "/" + kPrefix + std::to_string(::getpid()) +
                            "-" + std::to_string(counter++);
  const int fd = ::open(named.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) {
    *path = named;
    return fd;
  }
  return ::memfd_create("lizard-upload", MFD_CLOEXEC);
}

}  // namespace

void UploadRows::remove_stale_files() {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(kShmDir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(kPrefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + std::strlen(kPrefix), nullptr, 10);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
      std::filesystem::remove(e.path(), ec);
  }
}

Result<std::shared_ptr<UploadRows>> UploadRows::create(size_t bytes) {
  std::string path;
  const int fd = open_rows_file(&path);
  if (fd < 0) return system_error("memfd_create");
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    Status st = system_error("reserving " + std::to_string(bytes) + " bytes");
    ::close(fd);
    if (!path.empty()) ::unlink(path.c_str());
    return st;
  }
  const uint8_t* map = nullptr;
  if (bytes > 0) {
    void* p = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      Status st = system_error("mmap");
      ::close(fd);
      if (!path.empty()) ::unlink(path.c_str());
      return st;
    }
    map = static_cast<const uint8_t*>(p);
  }
  return std::shared_ptr<UploadRows>(new UploadRows(fd, std::move(path), bytes, map));
}

UploadRows::~UploadRows() {
  if (map_) ::munmap(const_cast<uint8_t*>(map_), size_);
  if (fd_ >= 0) ::close(fd_);
  if (!path_.empty()) ::unlink(path_.c_str());
}

Status UploadRows::write(size_t offset, const void* data, size_t n) {
  if (offset > size_ || n > size_ - offset)
    return invalid_argument("rows at byte " + std::to_string(offset) + " lie outside the " +
                            std::to_string(size_) + " bytes announced");
  // pwrite rather than a store through the mapping: no page fault per page.
  const char* from = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t wrote = ::pwrite(fd_, from, n, static_cast<off_t>(offset));
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return system_error("write");
    from += wrote;
    offset += static_cast<size_t>(wrote);
    n -= static_cast<size_t>(wrote);
  }
  return Status::Ok();
}

std::string_view UploadRows::view(size_t offset, size_t n) const {
  if (offset > size_ || n > size_ - offset) return {};
  return {reinterpret_cast<const char*>(map_) + offset, n};
}

Result<FileRows> UploadRows::file_range(size_t offset, size_t n) const {
  if (offset > size_ || n > size_ - offset)
    return invalid_argument("uploaded rows: bytes [" + std::to_string(offset) + ", " +
                            std::to_string(offset + n) + ") lie past their " +
                            std::to_string(size_) + " bytes");
  FileRows rows;
  rows.path =
      path_.empty() ? "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(fd_) : path_;
  LIZARD_ASSIGN_OR_RETURN(rows.identity, file_identity(fd_));
  rows.offset = offset;
  rows.size = n;
  return rows;
}

}  // namespace lizard
