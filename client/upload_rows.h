// UploadRows: one uploaded field's rows on a worker, held in a memory file
// (/dev/shm/lizard-rows-<worker pid>-<n>, mode 0600, removed with the last
// UploadRows of it) rather than a heap buffer.  The worker writes the chunks
// the server streams into it as they arrive; an executor process then reads
// its part through its file-rows pipeline (exec/file_rows.h: several
// threads, pinned staging, overlapped copies to the GPU), opening the file
// by that path, instead of being sent the bytes over its channel.  A path
// of its own, not /proc/<worker pid>/fd/<n>: an executor in its sandbox
// (sandbox/sandbox.h) may not look into its worker's /proc entry.  Without
// /dev/shm it is an anonymous memfd, opened through /proc.  Executors in the
// worker's own process read the mapping.  A worker that was killed leaves
// its files: the next worker on the host removes those of processes gone
// (remove_stale_files()).
//
//   auto rows = UploadRows::create(total_bytes);          // Result<shared_ptr>
//   Status s = (*rows)->write(offset, chunk.data(), chunk.size());
//   Result<FileRows> part = (*rows)->file_range(offset, n); // for a process
//   std::string_view bytes = (*rows)->view(offset, n);      // in this process
//
// The file lives as long as the last UploadRows pointing at it (a run's
// parts and the worker's UploadCache share it); a reader that opened it
// keeps its pages until it closes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "exec/file_rows.h"

namespace lizard {

class UploadRows {
 public:
  static Result<std::shared_ptr<UploadRows>> create(size_t bytes);
  // Removes the files of workers no longer running.
  static void remove_stale_files();
  ~UploadRows();
  UploadRows(const UploadRows&) = delete;
  UploadRows& operator=(const UploadRows&) = delete;

  size_t size() const { return size_; }
  // Copies `n` bytes to [offset, offset + n); an error when that range lies
  // past the end.
  Status write(size_t offset, const void* data, size_t n);
  // Bytes [offset, offset + n), read through the mapping (empty when the
  // range lies past the end).
  std::string_view view(size_t offset, size_t n) const;
  // Bytes [offset, offset + n) as a byte range of a file another process of
  // this user may open and read, with the identity it has now.
  Result<FileRows> file_range(size_t offset, size_t n) const;

 private:
  UploadRows(int fd, std::string path, size_t size, const uint8_t* map)
      : fd_(fd), path_(std::move(path)), size_(size), map_(map) {}
  int fd_ = -1;
  std::string path_;  // in /dev/shm; empty for a memfd
  size_t size_ = 0;
  const uint8_t* map_ = nullptr;  // read-only
};

}  // namespace lizard
