#include "exec/file_rows.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "common/parallel.h"
#include "dataset/dataset_file.h"

namespace lizard {
namespace {

Status changed(const std::string& path, const char* when) {
  return invalid_argument(path + " changed " + when +
                          " (rewritten or replaced); its rows are not read stale: run again");
}

}  // namespace

Result<FileIdentity> file_identity(int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return internal_error(std::string("fstat: ") + std::strerror(errno));
  return FileIdentity::of(st);
}

Result<FileIdentity> file_identity(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return invalid_argument("cannot open " + path + ": " + std::strerror(errno));
  return FileIdentity::of(st);
}

Result<FileRows> locate_file_rows(const std::string& path, FileFormat format, DType dtype,
                                  int64_t width, int64_t first_row, int64_t rows) {
  if (format != FileFormat::kNpy && format != FileFormat::kRaw)
    return invalid_argument(path + ": " + file_format_name(format) +
                            " rows have no fixed place in the file");
  if (first_row < 0 || rows < 0) return invalid_argument(path + ": a negative row range");
  LIZARD_ASSIGN_OR_RETURN(FileIdentity before, file_identity(path));
  LIZARD_ASSIGN_OR_RETURN(BinaryRows layout, binary_rows(path, format, dtype, width));
  LIZARD_ASSIGN_OR_RETURN(FileIdentity after, file_identity(path));
  if (before != after) return changed(path, "while its header was checked");
  if (first_row > layout.rows - rows)
    return invalid_argument(path + ": rows [" + std::to_string(first_row) + ", " +
                            std::to_string(first_row + rows) + ") are past its " +
                            std::to_string(layout.rows) + " rows");
  FileRows out;
  out.path = path;
  out.identity = after;
  out.offset = layout.data_offset + static_cast<uint64_t>(first_row) * layout.row_bytes;
  out.size = static_cast<uint64_t>(rows) * layout.row_bytes;
  return out;
}

Result<OwnedFd> open_for_reading(const FileRows& rows) {
  int fd;
  do {
    fd = ::open(rows.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return invalid_argument("cannot open " + rows.path + ": " + std::strerror(errno));
  return OwnedFd(fd);
}

Result<OpenRows> OpenRows::open(const FileRows& rows) {
  int fd;
  if (rows.descriptor) {
    fd = ::fcntl(rows.descriptor->get(), F_DUPFD_CLOEXEC, 0);
  } else {
    do {
      fd = ::open(rows.path.c_str(), O_RDONLY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
  }
  if (fd < 0) return invalid_argument("cannot open " + rows.path + ": " + std::strerror(errno));
  OpenRows out(rows, fd);
  LIZARD_ASSIGN_OR_RETURN(FileIdentity now, file_identity(fd));
  if (now != rows.identity) return changed(rows.path, "after the worker checked it");
  if (rows.offset > now.size || rows.size > now.size - rows.offset)
    return invalid_argument(rows.path + ": bytes [" + std::to_string(rows.offset) + ", " +
                            std::to_string(rows.offset + rows.size) + ") are past its end");
  return out;
}

OpenRows::OpenRows(OpenRows&& other) noexcept
    : rows_(std::move(other.rows_)), fd_(std::exchange(other.fd_, -1)) {}

OpenRows& OpenRows::operator=(OpenRows&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    rows_ = std::move(other.rows_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

OpenRows::~OpenRows() {
  if (fd_ >= 0) ::close(fd_);
}

Status OpenRows::read_slice(uint64_t file_offset, size_t n, char* dst) const {
  size_t done = 0;
  while (done < n) {
    ssize_t got = ::pread(fd_, dst + done, n - done, static_cast<off_t>(file_offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0)
      return internal_error("cannot read " + rows_.path + " at byte offset " +
                            std::to_string(file_offset + done) + ": " + std::strerror(errno));
    if (got == 0) return changed(rows_.path, "while it was read (it ended early)");
    done += static_cast<size_t>(got);
  }
  return Status::Ok();
}

Status OpenRows::read(uint64_t at, size_t n, void* dst, int threads) const {
  if (at > rows_.size || n > rows_.size - at)
    return internal_error("reading past the rows of " + rows_.path);
  const size_t slices =
      std::clamp<size_t>(n / kMinSliceBytes, 1, static_cast<size_t>(std::max(threads, 1)));
  char* out = static_cast<char*>(dst);
  const uint64_t base = rows_.offset + at;
  return first_error(for_each_parallel(slices, [&](size_t i) {
    const size_t from = n * i / slices, to = n * (i + 1) / slices;
    return read_slice(base + from, to - from, out + from);
  }));
}

Status OpenRows::check_unchanged() const {
  LIZARD_ASSIGN_OR_RETURN(FileIdentity now, file_identity(fd_));
  if (now != rows_.identity) return changed(rows_.path, "while it was read");
  return Status::Ok();
}

Status read_file_rows(const FileRows& rows, void* dst, int threads) {
  LIZARD_ASSIGN_OR_RETURN(OpenRows f, OpenRows::open(rows));
  LIZARD_RETURN_IF_ERROR(f.read(0, rows.size, dst, threads));
  return f.check_unchanged();
}

int file_read_threads() {
  const unsigned cores = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp<unsigned>(cores, 1, 8));
}

}  // namespace lizard
