#include "exec/cuda/cuda_executor.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "exec/cuda/cuda_device_executor.h"
#include "exec/cuda/cuda_driver.h"
#include "exec/cuda/gpu_load.h"
#include "exec/cuda/nvrtc_compiler.h"
#include "exec/kept_rows_budget.h"
#include "exec/launch.h"
#include "exec/partition.h"
#include "exec/program_variant.h"
#include "program/reducers.h"

namespace lizard {
namespace cuda {
namespace {

// "580.95.05" from /proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX
// Open Kernel Module for x86_64  580.95.05  Release Build ..."), or "".
std::string kernel_module_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(in, line)) return "";
  std::istringstream words(line);
  std::string w;
  while (words >> w)
    if (!w.empty() && std::isdigit(static_cast<unsigned char>(w[0])) &&
        w.find('.') != std::string::npos)
      return w;
  return "";
}

}  // namespace

CudaExecutor::~CudaExecutor() {
  if (!ctx_) return;
  cu_->cuCtxSetCurrent(ctx_);
  release_run();
  if (lost_.ok()) free_kept();
  drop_kept_rows(!lost_.ok());
  if (staging_ && !lost_.ok()) staging_->forget();
  staging_.reset();
  for (auto& [hash, m] : modules_)
    if (m.module) cu_->cuModuleUnload(m.module);
  if (meter_) meter_->unload();
  detach_context();
}

Status CudaExecutor::open(int ordinal) {
  info_.kind = "cuda";
  info_.ordinal = ordinal;
  LIZARD_RETURN_IF_ERROR(check(cu_->cuDeviceGet(&dev_, ordinal), "cuDeviceGet"));
  LIZARD_RETURN_IF_ERROR(attach_context());
  meter_ = std::make_unique<GpuLoadMeter>(cu_, nvml_, dev_);
  return fill_info();
}

Status CudaExecutor::attach_context() {
  LIZARD_RETURN_IF_ERROR(
      check(cu_->cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain"));
  LIZARD_RETURN_IF_ERROR(make_current());
  LIZARD_RETURN_IF_ERROR(
      check(cu_->cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate"));
  LIZARD_RETURN_IF_ERROR(check(cu_->cuEventCreate(&ev_begin_, CU_EVENT_DEFAULT), "cuEventCreate"));
  return check(cu_->cuEventCreate(&ev_end_, CU_EVENT_DEFAULT), "cuEventCreate");
}

void CudaExecutor::detach_context() {
  if (ev_begin_) cu_->cuEventDestroy(ev_begin_);
  if (ev_end_) cu_->cuEventDestroy(ev_end_);
  if (stream_) cu_->cuStreamDestroy(stream_);
  ev_begin_ = ev_end_ = nullptr;
  stream_ = nullptr;
  if (ctx_) cu_->cuDevicePrimaryCtxRelease(dev_);
  ctx_ = nullptr;
}

Status CudaExecutor::fill_info() {
  char name[256] = {0};
  LIZARD_RETURN_IF_ERROR(
      check(cu_->cuDeviceGetName(name, sizeof name - 1, dev_), "cuDeviceGetName"));
  info_.name = name;
  auto attr = [&](int a, int* out) {
    return check(cu_->cuDeviceGetAttribute(out, a, dev_), "cuDeviceGetAttribute");
  };
  int major = 0, minor = 0;
  LIZARD_RETURN_IF_ERROR(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &major));
  LIZARD_RETURN_IF_ERROR(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &minor));
  LIZARD_RETURN_IF_ERROR(attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &info_.sm_count));
  LIZARD_RETURN_IF_ERROR(attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, &info_.clock_khz));
  LIZARD_RETURN_IF_ERROR(attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &max_block_));
  if (!attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &shared_optin_).ok())
    shared_optin_ = kDefaultSharedLimit;
  info_.arch = "sm_" + std::to_string(major) + std::to_string(minor);
  size_t total = 0;
  LIZARD_RETURN_IF_ERROR(check(cu_->cuDeviceTotalMem(&total, dev_), "cuDeviceTotalMem"));
  info_.total_memory = total;
  read_free_memory();
  const std::string module = kernel_module_version();
  info_.driver = (module.empty() ? "" : module + " ") + "(CUDA " + cu_->version_string() + ")";
  info_.weight = gpu_weight(info_.sm_count, info_.clock_khz);
  return Status::Ok();
}

// Memory this executor holds only for a next run (kept rows, the last run's
// dataset buffers) counts as free: a run that needs it frees it first.
void CudaExecutor::read_free_memory() {
  size_t free = 0, total = 0;
  if (cu_->cuMemGetInfo(&free, &total) != CUDA_SUCCESS) return;
  uint64_t reclaimable = kept_rows_.bytes();
  for (const auto& [ptr, bytes] : kept_.device) reclaimable += bytes;
  info_.free_memory = std::min<uint64_t>(total, free + reclaimable);
}

}  // namespace cuda

Result<std::vector<std::unique_ptr<Executor>>> make_cuda_executors(const CudaOptions& options) {
  using namespace cuda;
  if (options.gpus.kind == GpuSelection::Kind::kNone)
    return invalid_argument("--gpus none selects no GPU for the CUDA backend");
  LIZARD_ASSIGN_OR_RETURN(std::shared_ptr<const CudaDriver> cu, CudaDriver::load());
  int count = 0;
  if (cu->cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0)
    return unavailable("no CUDA devices");
  auto cc = NvrtcCompiler::open(options.cuda_path, options.cache_dir, options.compile_cache_bytes);
  if (!cc.ok()) return cc.status().with_context("CUDA devices found, but cannot compile for them");
  // Utilisation comes from NVML where the driver installed it; else it is unknown.
  auto nvml = NvmlLibrary::load();
  std::shared_ptr<const NvmlLibrary> nvml_lib = nvml.ok() ? *nvml : nullptr;
  // auto:N measures every device's load through an open executor.
  std::vector<std::unique_ptr<CudaExecutor>> probed(static_cast<size_t>(count));
  std::vector<ExecutorLoad> loads(static_cast<size_t>(count));
  if (options.gpus.needs_load())
    for (int g = 0; g < count; ++g) {
      probed[g] = std::make_unique<CudaExecutor>(cu, *cc, nvml_lib, options.kept_rows_bytes);
      probed[g]->set_quick_builds(options.quick_builds);
      LIZARD_RETURN_IF_ERROR(probed[g]->open(g));
      if (options.kept_rows_auto)
        probed[g]->set_kept_rows_budget(kept_rows_budget(kKeptRowsAuto, probed[g]->info()));
      probed[g]->refresh_load();
      const ExecutorInfo& i = probed[g]->info();
      loads[g] = {i.weight, i.free_memory, i.utilization, i.launch_delay_us};
    }
  LIZARD_ASSIGN_OR_RETURN(std::vector<int> ordinals, choose_gpus(options.gpus, loads));
  std::vector<std::unique_ptr<Executor>> out;
  for (int g : ordinals) {
    std::unique_ptr<CudaExecutor> e = std::move(probed[g]);
    if (!e) {
      e = std::make_unique<CudaExecutor>(cu, *cc, nvml_lib, options.kept_rows_bytes);
      e->set_quick_builds(options.quick_builds);
      LIZARD_RETURN_IF_ERROR(e->open(g));
      if (options.kept_rows_auto)
        e->set_kept_rows_budget(kept_rows_budget(kKeptRowsAuto, e->info()));
    }
    if (out.empty() && options.warm_up_compiler) e->warm_up_compiler();
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace lizard
