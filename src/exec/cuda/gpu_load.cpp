#include "exec/cuda/gpu_load.h"

#include <algorithm>
#include <chrono>

namespace lizard {
namespace cuda {
namespace {

// An empty kernel in PTX, which the driver compiles for any GPU it runs.
constexpr const char* kProbePtx = R"(.version 7.0
.target sm_50
.address_size 64
.visible .entry lizard_probe()
{
  ret;
}
)";

constexpr int kProbeLaunches = 3;

}  // namespace

double gpu_weight(int sm_count, int clock_khz) {
  return sm_count * (clock_khz / 1e6);
}

Result<std::string> pci_bus_id(const CudaDriver& cu, CUdevice dev) {
  if (!cu.cuDeviceGetPCIBusId) return unavailable("the CUDA driver lacks cuDeviceGetPCIBusId");
  char id[32] = {0};
  LIZARD_RETURN_IF_ERROR(
      cu.check(cu.cuDeviceGetPCIBusId(id, sizeof id - 1, dev), "cuDeviceGetPCIBusId"));
  return std::string(id);
}

GpuLoadMeter::GpuLoadMeter(std::shared_ptr<const CudaDriver> cu,
                           std::shared_ptr<const NvmlLibrary> nvml, CUdevice dev)
    : cu_(std::move(cu)), nvml_(std::move(nvml)) {
  if (!nvml_) return;
  auto bus = pci_bus_id(*cu_, dev);
  auto d = bus.ok() ? nvml_->device(*bus) : Result<NvmlDevice>(bus.status());
  if (d.ok()) nvml_device_ = *d;
}

void GpuLoadMeter::measure(CUstream stream, CUevent done, ExecutorInfo* info) {
  info->utilization = -1;
  if (nvml_device_)
    if (auto u = nvml_->utilization(nvml_device_); u.ok()) info->utilization = *u;
  auto delay = launch_delay_us(stream, done);
  info->launch_delay_us = delay.ok() ? *delay : -1;
}

Result<double> GpuLoadMeter::launch_delay_us(CUstream stream, CUevent done) {
  if (!kernel_) {
    LIZARD_RETURN_IF_ERROR(
        cu_->check(cu_->cuModuleLoadData(&module_, kProbePtx), "loading the launch probe"));
    LIZARD_RETURN_IF_ERROR(
        cu_->check(cu_->cuModuleGetFunction(&kernel_, module_, "lizard_probe"), "lizard_probe"));
  }
  double best = -1;
  for (int i = 0; i < kProbeLaunches; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    LIZARD_RETURN_IF_ERROR(cu_->check(
        cu_->cuLaunchKernel(kernel_, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr), "probe"));
    LIZARD_RETURN_IF_ERROR(cu_->check(cu_->cuEventRecord(done, stream), "cuEventRecord"));
    LIZARD_RETURN_IF_ERROR(cu_->check(cu_->cuEventSynchronize(done), "cuEventSynchronize"));
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    best = best < 0 ? us : std::min(best, us);
  }
  return best;
}

void GpuLoadMeter::unload() {
  if (module_) cu_->cuModuleUnload(module_);
  forget_module();
}

}  // namespace cuda

namespace {

// Free memory through a context of the device's own; for nodes without NVML.
Result<uint64_t> free_memory_via_context(const cuda::CudaDriver& cu, cuda::CUdevice dev) {
  cuda::CUcontext ctx = nullptr;
  LIZARD_RETURN_IF_ERROR(
      cu.check(cu.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain"));
  size_t free = 0, total = 0;
  Status st = cu.check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  if (st.ok()) st = cu.check(cu.cuMemGetInfo(&free, &total), "cuMemGetInfo");
  cu.cuCtxSetCurrent(nullptr);
  cu.cuDevicePrimaryCtxRelease(dev);
  if (!st.ok()) return st;
  return static_cast<uint64_t>(free);
}

}  // namespace

Result<std::vector<ExecutorLoad>> read_gpu_loads() {
  using namespace cuda;
  LIZARD_ASSIGN_OR_RETURN(std::shared_ptr<const CudaDriver> cu, CudaDriver::load());
  auto nvml = NvmlLibrary::load();
  int count = 0;
  if (cu->cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0)
    return unavailable("no CUDA devices");
  std::vector<ExecutorLoad> out;
  for (int k = 0; k < count; ++k) {
    CUdevice dev = 0;
    LIZARD_RETURN_IF_ERROR(cu->check(cu->cuDeviceGet(&dev, k), "cuDeviceGet"));
    int sms = 0, clock = 0;
    cu->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    cu->cuDeviceGetAttribute(&clock, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev);
    ExecutorLoad load;
    load.weight = gpu_weight(sms, clock);
    bool have_memory = false;
    if (nvml.ok()) {
      auto bus = pci_bus_id(*cu, dev);
      auto d = bus.ok() ? (*nvml)->device(*bus) : Result<NvmlDevice>(bus.status());
      if (d.ok()) {
        if (auto u = (*nvml)->utilization(*d); u.ok()) load.utilization = *u;
        if (auto m = (*nvml)->memory(*d); m.ok()) load.free_memory = m->first, have_memory = true;
      }
    }
    if (!have_memory) {
      LIZARD_ASSIGN_OR_RETURN(load.free_memory, free_memory_via_context(*cu, dev));
    }
    out.push_back(load);
  }
  return out;
}

Result<std::vector<int>> rank_gpus() {
  LIZARD_ASSIGN_OR_RETURN(std::vector<ExecutorLoad> loads, read_gpu_loads());
  std::vector<int> ordinals;
  for (size_t i : rank_by_load(loads)) ordinals.push_back(static_cast<int>(i));
  return ordinals;
}

}  // namespace lizard
