#include "exec/chunked_load.h"

#include <algorithm>
#include <chrono>

namespace lizard {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

Status load_in_chunks(const OpenRows& rows, const std::vector<uint8_t*>& buffers,
                      size_t chunk_bytes, int threads, const ChunkSink& sink, LoadTimes* times) {
  if (buffers.empty() || chunk_bytes == 0) return internal_error("no staging buffers to load into");
  const uint64_t total = rows.rows().size;
  std::vector<bool> used(buffers.size(), false);
  size_t chunk = 0;
  for (uint64_t at = 0; at < total; at += chunk_bytes, ++chunk) {
    const size_t b = chunk % buffers.size();
    const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk_bytes, total - at));
    const auto t0 = Clock::now();
    if (used[b]) LIZARD_RETURN_IF_ERROR(sink.wait(b));
    const auto t1 = Clock::now();
    LIZARD_RETURN_IF_ERROR(rows.read(at, n, buffers[b], threads));
    const auto t2 = Clock::now();
    LIZARD_RETURN_IF_ERROR(sink.send(b, at, n));
    used[b] = true;
    if (times) {
      times->wait_ms += ms_between(t0, t1);
      times->read_ms += ms_between(t1, t2);
      times->send_ms += ms_between(t2, Clock::now());
      times->bytes += n;
    }
  }
  return rows.check_unchanged();
}

}  // namespace lizard
