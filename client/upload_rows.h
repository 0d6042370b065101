// UploadRows: one uploaded field's rows on a worker, held in an anonymous
// memory file (memfd) rather than a heap buffer.  The worker writes the
// chunks the server streams into it as they arrive; an executor process then
// reads its part through its file-rows pipeline (exec/file_rows.h: several
// threads, pinned staging, overlapped copies to the GPU), opening the file
// as /proc/<worker pid>/fd/<n>, instead of being sent the bytes over its
// channel.  Executors in the worker's own process read the mapping.
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
#include <string_view>

#include "common/status.h"
#include "exec/file_rows.h"

namespace lizard {

class UploadRows {
 public:
  static Result<std::shared_ptr<UploadRows>> create(size_t bytes);
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
  UploadRows(int fd, size_t size, const uint8_t* map) : fd_(fd), size_(size), map_(map) {}
  int fd_ = -1;
  size_t size_ = 0;
  const uint8_t* map_ = nullptr;  // read-only
};

}  // namespace lizard
