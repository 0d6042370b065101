#include "client/upload_rows.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace lizard {

namespace {

Status system_error(const std::string& what) {
  return internal_error("uploaded rows: " + what + ": " + std::strerror(errno));
}

}  // namespace

Result<std::shared_ptr<UploadRows>> UploadRows::create(size_t bytes) {
  const int fd = ::memfd_create("lizard-upload", MFD_CLOEXEC);
  if (fd < 0) return system_error("memfd_create");
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    Status st = system_error("reserving " + std::to_string(bytes) + " bytes");
    ::close(fd);
    return st;
  }
  const uint8_t* map = nullptr;
  if (bytes > 0) {
    void* p = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      Status st = system_error("mmap");
      ::close(fd);
      return st;
    }
    map = static_cast<const uint8_t*>(p);
  }
  return std::shared_ptr<UploadRows>(new UploadRows(fd, bytes, map));
}

UploadRows::~UploadRows() {
  if (map_) ::munmap(const_cast<uint8_t*>(map_), size_);
  if (fd_ >= 0) ::close(fd_);
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
  rows.path = "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(fd_);
  LIZARD_ASSIGN_OR_RETURN(rows.identity, file_identity(fd_));
  rows.offset = offset;
  rows.size = n;
  return rows;
}

}  // namespace lizard
