// RowStreamer: sends a worker its rows of an uploaded dataset field as paced
// data_chunk messages, straight from a mapping of the stored file (no copy),
// never letting more than `max_queued` bytes wait on the worker's link.
// No state and no lock: it runs on the caller's thread (a run driver's
// loader), and blocks it while the link's queue is full.
//
//   Status st = stream_upload_rows(link, wire_id, field, source, type, first, count);
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/dtype.h"
#include "common/status.h"
#include "server/run_request.h"
#include "server/transport.h"

namespace lizard {

struct RowStreamOptions {
  // Small enough that a frame sent after a chunk (a cancel) waits little for
  // it on a slow link: 4 s at 2 Mbit/s.
  size_t chunk_bytes = size_t{1} << 20;
  size_t max_queued = size_t{64} << 20;
};

// Sends rows [first, first + count) of an uploaded field `field` of a run;
// each chunk names the field's total size on this worker, so that the worker
// allocates it once.
Status stream_upload_rows(WorkerLink& link, const std::string& wire_id, size_t field,
                          const ParsedSource& source, DType type, int64_t first, int64_t count,
                          RowStreamOptions opts = {});

}  // namespace lizard
