#include "exec/cuda/pinned_staging.h"

#include <algorithm>
#include <cstring>

namespace lizard {
namespace cuda {

Result<std::unique_ptr<PinnedStaging>> PinnedStaging::create(std::shared_ptr<const CudaDriver> cu,
                                                             size_t chunk_bytes, size_t buffers) {
  std::unique_ptr<PinnedStaging> s(new PinnedStaging(std::move(cu)));
  s->chunk_bytes_ = chunk_bytes;
  for (size_t b = 0; b < buffers; ++b) {
    void* host = nullptr;
    LIZARD_RETURN_IF_ERROR(s->cu_->check(
        s->cu_->cuMemHostAlloc(&host, chunk_bytes, CU_MEMHOSTALLOC_PORTABLE), "staging buffer"));
    s->buffers_.push_back(static_cast<uint8_t*>(host));
    CUevent ev = nullptr;
    LIZARD_RETURN_IF_ERROR(
        s->cu_->check(s->cu_->cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING), "staging event"));
    s->events_.push_back(ev);
  }
  return s;
}

PinnedStaging::~PinnedStaging() {
  for (CUevent ev : events_) cu_->cuEventDestroy(ev);
  for (uint8_t* b : buffers_) cu_->cuMemFreeHost(b);
}

void PinnedStaging::forget() {
  events_.clear();
  buffers_.clear();
}

Status PinnedStaging::load(const FileRows& rows, CUdeviceptr dst, CUstream stream, int threads,
                           LoadTimes* times) {
  if (buffers_.empty()) return internal_error("the staging buffers were freed");
  LIZARD_ASSIGN_OR_RETURN(OpenRows file, OpenRows::open(rows));
  ChunkSink sink;
  sink.send = [&](size_t b, uint64_t at, size_t n) -> Status {
    LIZARD_RETURN_IF_ERROR(
        cu_->check(cu_->cuMemcpyHtoDAsync(dst + at, buffers_[b], n, stream), "copying rows"));
    return cu_->check(cu_->cuEventRecord(events_[b], stream), "cuEventRecord");
  };
  sink.wait = [&](size_t b) {
    return cu_->check(cu_->cuEventSynchronize(events_[b]), "waiting for a staging buffer");
  };
  Status st = load_in_chunks(file, buffers_, chunk_bytes_, threads, sink, times);
  // Every buffer is free again before the next load reads into it.
  for (CUevent ev : events_) (void)cu_->cuEventSynchronize(ev);
  return st;
}

Status PinnedStaging::download(CUdeviceptr src, uint8_t* dst, size_t bytes, CUstream stream) {
  if (buffers_.empty()) return internal_error("the staging buffers were freed");
  const size_t n = buffers_.size();
  const size_t chunks = (bytes + chunk_bytes_ - 1) / chunk_bytes_;
  auto chunk_size = [&](size_t i) { return std::min(chunk_bytes_, bytes - i * chunk_bytes_); };
  auto copy_out = [&](size_t i) -> Status {
    LIZARD_RETURN_IF_ERROR(
        cu_->check(cu_->cuEventSynchronize(events_[i % n]), "waiting for a staging buffer"));
    std::memcpy(dst + i * chunk_bytes_, buffers_[i % n], chunk_size(i));
    return Status::Ok();
  };
  Status st;
  for (size_t i = 0; i < chunks && st.ok(); ++i) {
    // Buffer i % n last held chunk i - n, copied out already.
    st = cu_->check(
        cu_->cuMemcpyDtoHAsync(buffers_[i % n], src + i * chunk_bytes_, chunk_size(i), stream),
        "downloading an output field");
    if (st.ok()) st = cu_->check(cu_->cuEventRecord(events_[i % n], stream), "cuEventRecord");
    if (st.ok() && i > 0) st = copy_out(i - 1);
  }
  if (st.ok() && chunks > 0) st = copy_out(chunks - 1);
  for (CUevent ev : events_) (void)cu_->cuEventSynchronize(ev);
  return st;
}

}  // namespace cuda
}  // namespace lizard
