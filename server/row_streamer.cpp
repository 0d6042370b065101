#include "server/row_streamer.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "dataset/mapped_rows.h"
#include "protocol/messages.h"

namespace lizard {

Status stream_upload_rows(WorkerLink& link, const std::string& wire_id, size_t field,
                          const ParsedSource& source, DType type, int64_t first, int64_t count,
                          RowStreamOptions opts) {
  LIZARD_ASSIGN_OR_RETURN(std::shared_ptr<const MappedRows> file,
                          MappedRows::open(source.path, source.format, type, source.width));
  const size_t row_bytes = file->row_bytes();
  const int64_t rows_per_chunk =
      std::max<int64_t>(1, static_cast<int64_t>(opts.chunk_bytes / row_bytes));
  const size_t total = static_cast<size_t>(count) * row_bytes;
  for (int64_t done = 0; done < count;) {
    const int64_t n = std::min(rows_per_chunk, count - done);
    LIZARD_ASSIGN_OR_RETURN(std::string_view rows, file->rows(first + done, n));
    while (link.queued_bytes() > opts.max_queued)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    DataChunkMsg chunk{wire_id, field, static_cast<size_t>(done) * row_bytes, rows.size(), total};
    link.send(OutgoingFrame(encode(chunk.to_message()), rows, file));
    done += n;
  }
  return Status::Ok();
}

}  // namespace lizard
