// InputFile: a regular file opened for reading, closed when it goes out of
// scope.  Reads are positional (pread) or sequential, and failures come back
// as Status values that name the path.  Opening never blocks: anything but a
// regular file (a FIFO, a device, a directory) is refused before any read.
//
//   Result<InputFile> f = InputFile::open(path);
//   if (!f.ok()) return f.status();   // "cannot open <path>: <strerror>"
//   Status s = f->read_at(offset, n, dst);
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace lizard {

class InputFile {
 public:
  static Result<InputFile> open(const std::string& path);
  // Takes `fd` (open for reading; closed on failure) once fstat says it is a
  // regular file; `path` names it in messages.
  static Result<InputFile> adopt(const std::string& path, int fd);

  InputFile(InputFile&& other) noexcept;
  InputFile& operator=(InputFile&& other) noexcept;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile();

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }
  int fd() const { return fd_; }

  // Reads exactly n bytes at `offset` into dst; fewer bytes is an error.
  Status read_at(uint64_t offset, size_t n, void* dst) const;
  // Reads up to n bytes from the current position; 0 at the end of the file.
  Result<size_t> read_some(size_t n, void* dst);

 private:
  InputFile(std::string path, int fd, uint64_t size);

  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace lizard
