// The end of a run on a GPU: its output fields downloaded, into end_run's
// vectors or into memory the caller chose (end_run_into), and its buffers
// kept for the next run (release_run, cuda_executor_run.cpp).
#include <string>
#include <vector>

#include "exec/cuda/cuda_device_executor.h"
#include "exec/partition.h"

namespace lizard {
namespace cuda {

Result<std::vector<std::vector<uint8_t>>> CudaExecutor::end_run(bool want_outputs) {
  if (!run_) return no_run_error("end_run");
  std::vector<std::vector<uint8_t>> out;
  std::vector<char*> to;
  if (want_outputs) {
    const std::vector<uint64_t> sizes = output_field_sizes();
    out.resize(sizes.size());
    for (size_t k = 0; k < sizes.size(); ++k) {
      out[k].resize(sizes[k]);
      to.push_back(sizes[k] ? reinterpret_cast<char*>(out[k].data()) : nullptr);
    }
  }
  Status st = finish_run(want_outputs, to);
  if (!st.ok() && want_outputs) return st;
  if (!st.ok()) return std::vector<std::vector<uint8_t>>{};
  return out;
}

std::vector<uint64_t> CudaExecutor::output_field_sizes() const {
  if (!run_) return {};
  const Manifest& man = run_->program.manifest;
  std::vector<uint64_t> sizes(man.dataset.size(), 0);
  for (size_t k = 0; k < man.dataset.size(); ++k)
    if (man.dataset[k].output) sizes[k] = run_->field_bytes[k];
  return sizes;
}

Status CudaExecutor::end_run_into(const std::vector<char*>& to) {
  if (!run_) return no_run_error("end_run");
  return finish_run(true, to);
}

// Downloads the output fields to `to` (when `want_outputs`) and frees the run.
Status CudaExecutor::finish_run(bool want_outputs, const std::vector<char*>& to) {
  if (!lost_.ok() || run_->device_lost) {
    Status failed = run_->failed.ok() ? lost_ : run_->failed;
    run_.reset();
    return want_outputs ? failed : Status::Ok();
  }
  LIZARD_RETURN_IF_ERROR(make_current());
  Status st = run_->failed;
  if (st.ok() && want_outputs) {
    const Manifest& man = run_->program.manifest;
    for (size_t k = 0; k < man.dataset.size() && k < to.size() && st.ok(); ++k) {
      if (!man.dataset[k].output || run_->field_bytes[k] == 0 || !to[k]) continue;
      st = download_field(k, to[k]).with_context("downloading output field '" +
                                                 man.dataset[k].name + "'");
    }
  }
  release_run();
  read_free_memory();
  return want_outputs ? st : Status::Ok();
}

// A large field crosses the bus through the pinned staging buffers, at the
// bus's rate, while the last chunk is copied out; a small one directly.
Status CudaExecutor::download_field(size_t k, char* to) {
  const size_t bytes = run_->field_bytes[k];
  if (bytes >= kStagedDownloadBytes && !staging_) {
    auto made = PinnedStaging::create(cu_);
    if (made.ok()) staging_ = std::move(made).value();
  }
  if (bytes < kStagedDownloadBytes || !staging_)
    return check(cu_->cuMemcpyDtoH(to, run_->fields[k], bytes), "cuMemcpyDtoH");
  return staging_->download(run_->fields[k], reinterpret_cast<uint8_t*>(to), bytes, stream_);
}

}  // namespace cuda
}  // namespace lizard
