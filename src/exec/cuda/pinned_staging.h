// PinnedStaging: a GPU executor's staging buffers for rows it reads from a
// file: a few pinned host buffers, each with an event, through which
// load_in_chunks (exec/chunked_load.h) reads chunk i + 1 while chunk i is
// copied to the device on the run's stream.  Copies from pinned memory run
// at the bus's rate and leave the host thread free to read the next chunk.
// A run's output fields come back through them the other way (download).
//
// Made once per executor (allocating pinned memory costs milliseconds), with
// the executor's context current, and used and destroyed with it current.
//
//   auto staging = PinnedStaging::create(cu, kChunkBytes, 2);
//   Status s = (*staging)->load(file_rows, device_ptr, stream, threads, &times);
//   // then synchronise `stream` before the rows are used
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "exec/chunked_load.h"
#include "exec/cuda/cuda_driver.h"
#include "exec/file_rows.h"

namespace lizard {
namespace cuda {

class PinnedStaging {
 public:
  // 32 MiB chunks: large enough that a copy's fixed cost is negligible,
  // small enough that several threads share each read.
  static constexpr size_t kChunkBytes = size_t{32} << 20;
  static constexpr size_t kBuffers = 2;

  static Result<std::unique_ptr<PinnedStaging>> create(std::shared_ptr<const CudaDriver> cu,
                                                       size_t chunk_bytes = kChunkBytes,
                                                       size_t buffers = kBuffers);
  ~PinnedStaging();
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;

  // Reads `rows` from their file into device memory at `dst` (rows.size
  // bytes) with `threads` reading threads, copying on `stream`.  On return
  // the last copies may still be in flight on `stream`.
  Status load(const FileRows& rows, CUdeviceptr dst, CUstream stream, int threads,
              LoadTimes* times);
  // Copies `bytes` of device memory at `src` to host memory at `dst` (any
  // memory: a mapped file, say) through the buffers, chunk i + 1 crossing
  // the bus while chunk i is copied out; done on return.
  Status download(CUdeviceptr src, uint8_t* dst, size_t bytes, CUstream stream);
  // A context reset freed the buffers and events: forget them.
  void forget();

 private:
  explicit PinnedStaging(std::shared_ptr<const CudaDriver> cu) : cu_(std::move(cu)) {}

  std::shared_ptr<const CudaDriver> cu_;
  size_t chunk_bytes_ = 0;
  std::vector<uint8_t*> buffers_;
  std::vector<CUevent> events_;
};

}  // namespace cuda
}  // namespace lizard
