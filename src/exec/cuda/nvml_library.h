// NvmlLibrary: the few entry points of NVIDIA's management library
// (libnvidia-ml.so.1, installed with the driver) that say how busy a GPU is,
// loaded at run time like the driver itself, so that a node without it
// simply reports no utilisation.  NVML numbers devices its own way, so GPUs
// are found by their PCI bus id, which CUDA reports too.
//
//   auto nvml = NvmlLibrary::load();                  // kUnavailable without it
//   auto dev = (*nvml)->device("0000:3B:00.0");       // from cuDeviceGetPCIBusId
//   Result<double> busy = (*nvml)->utilization(*dev); // percent
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/shared_library.h"
#include "common/status.h"

namespace lizard::cuda {

using NvmlDevice = struct nvmlDevice_st*;

class NvmlLibrary {
 public:
  // Loads libnvidia-ml.so.1 and calls nvmlInit; kUnavailable when either fails.
  static Result<std::shared_ptr<const NvmlLibrary>> load();
  // Same, trying `names` (paths or sonames) in turn; used by tests.
  static Result<std::shared_ptr<const NvmlLibrary>> load_from(
      const std::vector<std::string>& names);
  ~NvmlLibrary();  // nvmlShutdown

  // The device at a PCI bus id ("0000:3B:00.0", any case).
  Result<NvmlDevice> device(const std::string& pci_bus_id) const;
  // Percent of the last sample period (1/6 s to 1 s) in which a kernel ran.
  Result<double> utilization(NvmlDevice d) const;
  // Free and total device memory in bytes.
  Result<std::pair<uint64_t, uint64_t>> memory(NvmlDevice d) const;

  NvmlLibrary() = default;  // for load_from

 private:
  struct Utilization {
    unsigned gpu, memory;
  };
  struct Memory {
    unsigned long long total, free, used;
  };
  Status check(int r, const std::string& what) const;

  SharedLibrary lib_;
  int (*init_)() = nullptr;
  int (*shutdown_)() = nullptr;
  const char* (*error_string_)(int) = nullptr;
  int (*by_pci_bus_id_)(const char*, NvmlDevice*) = nullptr;
  int (*utilization_rates_)(NvmlDevice, Utilization*) = nullptr;
  int (*memory_info_)(NvmlDevice, Memory*) = nullptr;
};

}  // namespace lizard::cuda
