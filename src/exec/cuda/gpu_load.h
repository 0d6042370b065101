// How busy this node's GPUs are: a meter that each CUDA executor keeps
// (utilisation from NVML, launch delay from an empty kernel), and, before any
// executor exists, a ranking of the node's GPUs by the same rule the server
// places runs with (plan/executor_load.h), for picking the best N at start.
//
//   GpuLoadMeter meter(cu, nvml, device);            // per executor
//   meter.measure(stream, event, &info);             // info.utilization, .launch_delay_us
//
//   Result<std::vector<int>> best = rank_gpus();     // CUDA ordinals, least loaded first
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "exec/cuda/cuda_driver.h"
#include "exec/cuda/nvml_library.h"
#include "exec/executor.h"
#include "plan/executor_load.h"

namespace lizard {
namespace cuda {

// A GPU's capability weight for partition plans: multiprocessors × GHz.
double gpu_weight(int sm_count, int clock_khz);

// The device's PCI bus id ("0000:3B:00.0"), which NVML finds it by.
Result<std::string> pci_bus_id(const CudaDriver& cu, CUdevice dev);

class GpuLoadMeter {
 public:
  // `nvml` may be null (no utilisation then).
  GpuLoadMeter(std::shared_ptr<const CudaDriver> cu, std::shared_ptr<const NvmlLibrary> nvml,
               CUdevice dev);
  GpuLoadMeter(const GpuLoadMeter&) = delete;
  GpuLoadMeter& operator=(const GpuLoadMeter&) = delete;

  // With the device's context current and `stream` idle: sets
  // info->utilization (NVML) and info->launch_delay_us (the fastest of three
  // empty kernels on `stream`, from the launch call until the host sees
  // `done`, recorded after it, complete); each stays -1 when it cannot be
  // measured.
  void measure(CUstream stream, CUevent done, ExecutorInfo* info);
  // The context was reset: the probe kernel's module went with it.
  void forget_module() { module_ = nullptr, kernel_ = nullptr; }
  // Unloads the probe kernel; with the context current, before it goes.
  void unload();

 private:
  Result<double> launch_delay_us(CUstream stream, CUevent done);

  std::shared_ptr<const CudaDriver> cu_;
  std::shared_ptr<const NvmlLibrary> nvml_;
  NvmlDevice nvml_device_ = nullptr;
  CUmodule module_ = nullptr;
  CUfunction kernel_ = nullptr;
};

}  // namespace cuda

// Every GPU CUDA shows this process (CUDA_VISIBLE_DEVICES applies), by
// ordinal: its weight, free memory and utilisation (NVML; without NVML the
// free memory comes from a context on each device and utilisation is
// unknown).  Launch delays are not measured here.
Result<std::vector<ExecutorLoad>> read_gpu_loads();
// The ordinals of read_gpu_loads(), least loaded first (rank_by_load).
Result<std::vector<int>> rank_gpus();

}  // namespace lizard
