// FileRows: a dataset field's rows that lie as one byte range of a file (a
// row range of an .npy or raw file), for an executor to read itself rather
// than be sent them: the worker locates the rows and notes the file's
// identity; the executor opens the file, refuses it when its identity has
// changed since (rewritten in place, or replaced by a rename), and reads the
// range with several threads straight into its buffer, or chunk by chunk
// into staging buffers (ChunkedLoad) on their way to a GPU.
//
//   Result<FileRows> rows = locate_file_rows(path, FileFormat::kNpy, DType::kFloat32, 8, 0, n);
//   ...                                   // sent to an executor (executor_protocol.h)
//   Result<OpenRows> f = OpenRows::open(*rows);   // checks the identity
//   Status s = f->read(0, rows->size, dst, 4);    // 4 threads
//   Status s = f->check_unchanged();              // not written while it was read
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/dtype.h"
#include "common/owned_fd.h"
#include "common/status.h"
#include "dataset/file_format.h"
#include "dataset/file_rows_key.h"

namespace lizard {

// FileIdentity (dataset/file_identity.h) tells one version of a file from
// another: the file (device, inode) and its size, mtime and ctime in
// nanoseconds.

// The identity of the open file `fd`, or of the file at `path`.
Result<FileIdentity> file_identity(int fd);
Result<FileIdentity> file_identity(const std::string& path);

// Bytes [offset, offset + size) of the file at `path`, as it was when its
// identity was taken.  Empty (no path): the rows come another way.
// `descriptor`, when set, is the file already open (by the worker, for an
// executor process whose sandbox may not open `path`): it is read instead
// of opening the path, with the same identity check.
struct FileRows {
  std::string path;
  FileIdentity identity;
  uint64_t offset = 0;
  uint64_t size = 0;
  std::shared_ptr<const OwnedFd> descriptor;
  bool empty() const { return path.empty(); }
};

// `rows.path` opened to be read (without blocking on a FIFO, never a
// controlling terminal), for handing to another process.
Result<OwnedFd> open_for_reading(const FileRows& rows);

// Where rows [first_row, first_row + rows) of a binary (npy, raw) file lie,
// after the checks of count_rows() (dataset_file.h); an error when the file
// changed while it was being checked.
Result<FileRows> locate_file_rows(const std::string& path, FileFormat format, DType dtype,
                                  int64_t width, int64_t first_row, int64_t rows);

// A FileRows' file, open and checked against its identity.
class OpenRows {
 public:
  static Result<OpenRows> open(const FileRows& rows);
  OpenRows(OpenRows&& other) noexcept;
  OpenRows& operator=(OpenRows&& other) noexcept;
  OpenRows(const OpenRows&) = delete;
  OpenRows& operator=(const OpenRows&) = delete;
  ~OpenRows();

  const FileRows& rows() const { return rows_; }
  // Reads bytes [at, at + n) of the rows (not of the file) into dst, with up
  // to `threads` threads each reading a slice of at least kMinSliceBytes.
  Status read(uint64_t at, size_t n, void* dst, int threads) const;
  // An error when the file has changed since it was opened.
  Status check_unchanged() const;

  static constexpr size_t kMinSliceBytes = size_t{4} << 20;

 private:
  OpenRows(FileRows rows, int fd) : rows_(std::move(rows)), fd_(fd) {}
  Status read_slice(uint64_t file_offset, size_t n, char* dst) const;

  FileRows rows_;
  int fd_ = -1;
};

// Reads all of `rows` into dst (rows.size bytes) with `threads` threads,
// refusing a file whose identity changed before or during the read.
Status read_file_rows(const FileRows& rows, void* dst, int threads);

// The threads to read with: the host's cores, at most 8.
int file_read_threads();

}  // namespace lizard
