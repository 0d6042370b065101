// CudaExecutor's kept rows: input rows a GPU keeps in its memory between
// runs (exec/kept_rows.h), copied into a run that names them, and read from
// a file ahead of the runs that will (the class is declared in
// cuda_device_executor.h).
#include <set>
#include <string>

#include "exec/cuda/cuda_device_executor.h"

namespace lizard {
namespace cuda {

Status CudaExecutor::copy_kept_rows(const std::string& key, CUdeviceptr to, uint64_t bytes,
                                    const std::string& field) {
  const DeviceRows* kept = kept_rows_.find(key);
  if (!kept)
    return not_found("GPU " + std::to_string(info_.ordinal) + " no longer keeps the rows " + key);
  return check(cu_->cuMemcpyDtoDAsync(to, kept->ptr(), bytes, stream_),
               "copying the kept rows of dataset field '" + field + "'");
}

// Best effort: rows that do not fit the budget or the device are not kept.
void CudaExecutor::keep_rows(const std::string& key, CUdeviceptr from, uint64_t bytes,
                             const std::set<std::string>& protect) {
  if (kept_rows_.contains(key) || !kept_rows_.could_keep(bytes, protect)) return;
  // Room within the budget before the allocation, so that the memory of the
  // rows that leave is free for the copy.
  while (kept_rows_.bytes() + bytes > kept_rows_.budget() && kept_rows_.evict_one(protect)) {
  }
  CUdeviceptr copy = 0;
  if (cu_->cuMemAlloc(&copy, bytes) != CUDA_SUCCESS) return;
  DeviceRows rows(cu_.get(), copy);
  if (cu_->cuMemcpyDtoDAsync(copy, from, bytes, stream_) != CUDA_SUCCESS) return;
  kept_rows_.put(key, std::move(rows), bytes, protect);
}

Status CudaExecutor::keep_file_rows(const std::string& key, const FileRows& where) {
  if (run_)
    return Status(Code::kConflict, "GPU " + std::to_string(info_.ordinal) +
                                       " serves a run; rows are kept between runs");
  LIZARD_RETURN_IF_ERROR(make_current());
  if (kept_rows_.find(key)) return Status::Ok();
  const uint64_t bytes = where.size;
  if (!kept_rows_.could_keep(bytes))
    return too_large("rows of " + std::to_string(bytes) + " bytes do not fit the " +
                     std::to_string(kept_rows_.budget()) + " bytes GPU " +
                     std::to_string(info_.ordinal) + " keeps (--kept-rows-mb)");
  while (kept_rows_.bytes() + bytes > kept_rows_.budget() && kept_rows_.evict_one()) {
  }
  free_kept_device();  // the last run's buffers may hold the room
  CUdeviceptr ptr = 0;
  LIZARD_RETURN_IF_ERROR(check(cu_->cuMemAlloc(&ptr, bytes), "allocating rows to keep"));
  DeviceRows rows(cu_.get(), ptr);
  LIZARD_RETURN_IF_ERROR(load_file_rows(where, ptr, "kept rows"));
  LIZARD_RETURN_IF_ERROR(check(cu_->cuStreamSynchronize(stream_), "cuStreamSynchronize"));
  kept_rows_.put(key, std::move(rows), bytes);
  return Status::Ok();
}

void CudaExecutor::forget_kept_rows(const std::set<std::string>& keys) {
  if (!make_current().ok()) return;
  for (const std::string& key : keys) kept_rows_.erase(key);
}

}  // namespace cuda
}  // namespace lizard
