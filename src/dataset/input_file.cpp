#include "dataset/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace lizard {

// Opened without blocking (a FIFO with no writer would block open() and
// every read), and refused unless it is a regular file.
Result<InputFile> InputFile::open(const std::string& path) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return invalid_argument("cannot open " + path + ": " + std::strerror(errno));
  return adopt(path, fd);
}

Result<InputFile> InputFile::adopt(const std::string& path, int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return invalid_argument("cannot open " + path + ": " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument("cannot open " + path + ": " +
                            (S_ISDIR(st.st_mode) ? std::strerror(EISDIR) : "not a regular file"));
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0 && (flags & O_NONBLOCK)) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return InputFile(path, fd, static_cast<uint64_t>(st.st_size));
}

InputFile::InputFile(std::string path, int fd, uint64_t size)
    : path_(std::move(path)), fd_(fd), size_(size) {}

InputFile::InputFile(InputFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), size_(other.size_) {}

InputFile& InputFile::operator=(InputFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
  }
  return *this;
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status InputFile::read_at(uint64_t offset, size_t n, void* dst) const {
  char* out = static_cast<char*>(dst);
  size_t done = 0;
  while (done < n) {
    ssize_t got = ::pread(fd_, out + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0)
      return internal_error("cannot read " + path_ + " at byte offset " +
                            std::to_string(offset + done) + ": " + std::strerror(errno));
    if (got == 0)
      return invalid_argument(path_ + ": unexpected end of file at byte offset " +
                              std::to_string(offset + done) + " (reading " + std::to_string(n) +
                              " bytes from offset " + std::to_string(offset) + ")");
    done += static_cast<size_t>(got);
  }
  return Status::Ok();
}

Result<size_t> InputFile::read_some(size_t n, void* dst) {
  while (true) {
    ssize_t got = ::read(fd_, dst, n);
    if (got >= 0) return static_cast<size_t>(got);
    if (errno != EINTR) return internal_error("cannot read " + path_ + ": " + std::strerror(errno));
  }
}

}  // namespace lizard
