// load_in_chunks: moves the rows of an open file (OpenRows, file_rows.h)
// through a few staging buffers to a destination that takes each chunk
// asynchronously, such as a GPU copy on a stream: while chunk i is on its
// way from one buffer, chunk i + 1 is read into the next (double buffering
// with two).  Each chunk is read by several threads.
//
//   ChunkSink sink;
//   sink.send = [&](size_t b, uint64_t at, size_t n) { copy_async(dst + at, buf[b], n);
//   record(ev[b]); }; sink.wait = [&](size_t b) { return synchronize(ev[b]); };   // buffer b free
//   again Status s = load_in_chunks(rows, buffers, chunk_bytes, threads, sink, &times);
//
// The sink's calls come from the caller's thread.  On return every chunk has
// been sent, but the last ones may still be in flight: the caller waits for
// them (or for its stream) before it uses the destination or frees a buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "common/status.h"
#include "exec/file_rows.h"

namespace lizard {

struct ChunkSink {
  // Takes `n` bytes in buffer `b` to the rows' bytes [at, at + n).
  std::function<Status(size_t b, uint64_t at, size_t n)> send;
  // Returns once buffer `b`'s last chunk has left it.
  std::function<Status(size_t b)> wait;
};

// Where a load's time went: reading the file, and waiting for a buffer
// (the destination being slower than the reads).
struct LoadTimes {
  double read_ms = 0;
  double wait_ms = 0;
  double send_ms = 0;
  uint64_t bytes = 0;
};

Status load_in_chunks(const OpenRows& rows, const std::vector<uint8_t*>& buffers,
                      size_t chunk_bytes, int threads, const ChunkSink& sink, LoadTimes* times);

}  // namespace lizard
