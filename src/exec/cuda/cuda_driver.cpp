#include "exec/cuda/cuda_driver.h"

namespace lizard::cuda {
namespace {

// Binds `*fn` to the first of `names` that the library exports.
template <typename Fn>
bool bind_one(const SharedLibrary& lib, Fn* fn, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    *fn = lib.symbol<Fn>(n);
    if (*fn) return true;
  }
  return false;
}

}  // namespace

Result<std::shared_ptr<const CudaDriver>> CudaDriver::load() {
  return load_from({"libcuda.so.1", "libcuda.so"});
}

Result<std::shared_ptr<const CudaDriver>> CudaDriver::load_from(
    const std::vector<std::string>& names) {
  auto d = std::make_shared<CudaDriver>();
  std::string errors;
  for (const auto& n : names) {
    auto lib = SharedLibrary::open(n);
    if (lib.ok()) {
      d->lib_ = std::move(lib).value();
      d->path_ = n;
      break;
    }
    errors += (errors.empty() ? "" : "; ") + lib.status().message();
  }
  if (!d->lib_.is_open())
    return unavailable((names.empty() ? std::string("libcuda") : names.front()) +
                       " not found (no NVIDIA driver on this node): " + errors);
  LIZARD_RETURN_IF_ERROR(d->bind());
  LIZARD_RETURN_IF_ERROR(d->init());
  return std::shared_ptr<const CudaDriver>(std::move(d));
}

Status CudaDriver::bind() {
  const SharedLibrary& l = lib_;
  bool ok = bind_one(l, &cuInit, {"cuInit"}) &&
            bind_one(l, &cuDriverGetVersion, {"cuDriverGetVersion"}) &&
            bind_one(l, &cuGetErrorName, {"cuGetErrorName"}) &&
            bind_one(l, &cuGetErrorString, {"cuGetErrorString"});
  if (!ok) return unavailable(path_ + " is not a CUDA driver library (cuInit is missing)");

  struct Entry {
    bool bound;
    const char* name;
  };
  const Entry entries[] = {
      {bind_one(l, &cuDeviceGetCount, {"cuDeviceGetCount"}), "cuDeviceGetCount"},
      {bind_one(l, &cuDeviceGet, {"cuDeviceGet"}), "cuDeviceGet"},
      {bind_one(l, &cuDeviceGetName, {"cuDeviceGetName"}), "cuDeviceGetName"},
      {bind_one(l, &cuDeviceGetAttribute, {"cuDeviceGetAttribute"}), "cuDeviceGetAttribute"},
      {bind_one(l, &cuDeviceTotalMem, {"cuDeviceTotalMem_v2"}), "cuDeviceTotalMem_v2"},
      {bind_one(l, &cuDevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"}),
       "cuDevicePrimaryCtxRetain"},
      {bind_one(l, &cuDevicePrimaryCtxRelease, {"cuDevicePrimaryCtxRelease_v2"}),
       "cuDevicePrimaryCtxRelease_v2"},
      {bind_one(l, &cuDevicePrimaryCtxReset, {"cuDevicePrimaryCtxReset_v2"}),
       "cuDevicePrimaryCtxReset_v2"},
      {bind_one(l, &cuCtxSetCurrent, {"cuCtxSetCurrent"}), "cuCtxSetCurrent"},
      {bind_one(l, &cuCtxSynchronize, {"cuCtxSynchronize"}), "cuCtxSynchronize"},
      {bind_one(l, &cuModuleLoadData, {"cuModuleLoadData"}), "cuModuleLoadData"},
      {bind_one(l, &cuModuleUnload, {"cuModuleUnload"}), "cuModuleUnload"},
      {bind_one(l, &cuModuleGetFunction, {"cuModuleGetFunction"}), "cuModuleGetFunction"},
      {bind_one(l, &cuFuncSetAttribute, {"cuFuncSetAttribute"}), "cuFuncSetAttribute"},
      {bind_one(l, &cuFuncGetAttribute, {"cuFuncGetAttribute"}), "cuFuncGetAttribute"},
      {bind_one(l, &cuLaunchKernel, {"cuLaunchKernel"}), "cuLaunchKernel"},
      {bind_one(l, &cuMemGetInfo, {"cuMemGetInfo_v2"}), "cuMemGetInfo_v2"},
      {bind_one(l, &cuMemAlloc, {"cuMemAlloc_v2"}), "cuMemAlloc_v2"},
      {bind_one(l, &cuMemFree, {"cuMemFree_v2"}), "cuMemFree_v2"},
      {bind_one(l, &cuMemHostAlloc, {"cuMemHostAlloc"}), "cuMemHostAlloc"},
      {bind_one(l, &cuMemFreeHost, {"cuMemFreeHost"}), "cuMemFreeHost"},
      {bind_one(l, &cuMemcpyHtoD, {"cuMemcpyHtoD_v2"}), "cuMemcpyHtoD_v2"},
      {bind_one(l, &cuMemcpyDtoH, {"cuMemcpyDtoH_v2"}), "cuMemcpyDtoH_v2"},
      {bind_one(l, &cuMemcpyHtoDAsync, {"cuMemcpyHtoDAsync_v2"}), "cuMemcpyHtoDAsync_v2"},
      {bind_one(l, &cuMemcpyDtoHAsync, {"cuMemcpyDtoHAsync_v2"}), "cuMemcpyDtoHAsync_v2"},
      {bind_one(l, &cuMemcpyDtoDAsync, {"cuMemcpyDtoDAsync_v2"}), "cuMemcpyDtoDAsync_v2"},
      {bind_one(l, &cuMemsetD8, {"cuMemsetD8_v2"}), "cuMemsetD8_v2"},
      {bind_one(l, &cuMemsetD8Async, {"cuMemsetD8Async"}), "cuMemsetD8Async"},
      {bind_one(l, &cuStreamCreate, {"cuStreamCreate"}), "cuStreamCreate"},
      {bind_one(l, &cuStreamDestroy, {"cuStreamDestroy_v2"}), "cuStreamDestroy_v2"},
      {bind_one(l, &cuStreamSynchronize, {"cuStreamSynchronize"}), "cuStreamSynchronize"},
      {bind_one(l, &cuEventCreate, {"cuEventCreate"}), "cuEventCreate"},
      {bind_one(l, &cuEventDestroy, {"cuEventDestroy_v2"}), "cuEventDestroy_v2"},
      {bind_one(l, &cuEventRecord, {"cuEventRecord"}), "cuEventRecord"},
      {bind_one(l, &cuEventSynchronize, {"cuEventSynchronize"}), "cuEventSynchronize"},
      {bind_one(l, &cuEventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}),
       "cuEventElapsedTime"},
  };
  bind_one(l, &cuDeviceGetPCIBusId, {"cuDeviceGetPCIBusId"});  // for NVML; optional
  std::string missing;
  for (const auto& e : entries)
    if (!e.bound) missing += (missing.empty() ? "" : ", ") + std::string(e.name);
  if (!missing.empty()) return unavailable("CUDA driver too old: " + path_ + " lacks " + missing);
  return Status::Ok();
}

Status CudaDriver::init() {
  CUresult r = cuInit(0);
  if (r == CUDA_ERROR_STUB_LIBRARY)
    return unavailable(path_ + " is the CUDA toolkit's stub library: no NVIDIA driver installed");
  if (r == CUDA_ERROR_NO_DEVICE) return unavailable("no CUDA devices");
  if (r == CUDA_ERROR_INSUFFICIENT_DRIVER)
    return unavailable("CUDA driver too old: " + error_text(r));
  if (r != CUDA_SUCCESS) return unavailable("cuInit failed: " + error_text(r));
  if (cuDriverGetVersion(&version_) != CUDA_SUCCESS) version_ = 0;
  if (version_ < kMinDriverVersion)
    return unavailable("CUDA driver too old: it supports CUDA " + version_string() +
                       ", lizard needs " + std::to_string(kMinDriverVersion / 1000) +
                       ".0 or newer");
  return Status::Ok();
}

std::string CudaDriver::error_text(CUresult r) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName) cuGetErrorName(r, &name);
  if (cuGetErrorString) cuGetErrorString(r, &text);
  std::string out = name ? name : "CUDA error " + std::to_string(r);
  if (text) out += std::string(": ") + text;
  return out;
}

Status CudaDriver::check(CUresult r, const std::string& what) const {
  if (r == CUDA_SUCCESS) return Status::Ok();
  return runtime_error(what + ": " + error_text(r));
}

bool CudaDriver::is_sticky(CUresult r) {
  // Kernel faults and hardware errors: the context must be reset.
  switch (r) {
    case 214:  // ECC_UNCORRECTABLE
    case 700:  // ILLEGAL_ADDRESS
    case 702:  // LAUNCH_TIMEOUT
    case 710:  // ASSERT
    case 714:  // HARDWARE_STACK_ERROR
    case 715:  // ILLEGAL_INSTRUCTION
    case 716:  // MISALIGNED_ADDRESS
    case 717:  // INVALID_ADDRESS_SPACE
    case 718:  // INVALID_PC
    case 719:  // LAUNCH_FAILED
    case 999:  // UNKNOWN
      return true;
    default:
      return false;
  }
}

std::string CudaDriver::version_string() const {
  return std::to_string(version_ / 1000) + "." + std::to_string((version_ % 1000) / 10);
}

}  // namespace lizard::cuda
