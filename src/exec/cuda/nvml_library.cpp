#include "exec/cuda/nvml_library.h"

namespace lizard::cuda {

Result<std::shared_ptr<const NvmlLibrary>> NvmlLibrary::load() {
  return load_from({"libnvidia-ml.so.1"});
}

Result<std::shared_ptr<const NvmlLibrary>> NvmlLibrary::load_from(
    const std::vector<std::string>& names) {
  auto n = std::make_shared<NvmlLibrary>();
  std::string errors;
  for (const auto& name : names) {
    auto lib = SharedLibrary::open(name);
    if (lib.ok()) {
      n->lib_ = std::move(lib).value();
      break;
    }
    errors += (errors.empty() ? "" : "; ") + lib.status().message();
  }
  if (!n->lib_.is_open()) return unavailable("NVML not found: " + errors);
  const SharedLibrary& l = n->lib_;
  n->init_ = l.symbol<int (*)()>("nvmlInit_v2");
  n->shutdown_ = l.symbol<int (*)()>("nvmlShutdown");
  n->error_string_ = l.symbol<const char* (*)(int)>("nvmlErrorString");
  n->by_pci_bus_id_ =
      l.symbol<int (*)(const char*, NvmlDevice*)>("nvmlDeviceGetHandleByPciBusId_v2");
  n->utilization_rates_ =
      l.symbol<int (*)(NvmlDevice, Utilization*)>("nvmlDeviceGetUtilizationRates");
  n->memory_info_ = l.symbol<int (*)(NvmlDevice, Memory*)>("nvmlDeviceGetMemoryInfo");
  if (!n->init_ || !n->shutdown_ || !n->by_pci_bus_id_ || !n->utilization_rates_ ||
      !n->memory_info_)
    return unavailable("NVML in " + names.front() + " lacks the entry points lizard uses");
  if (int r = n->init_(); r != 0) {
    n->shutdown_ = nullptr;  // nothing to shut down
    return unavailable(n->check(r, "nvmlInit").message());
  }
  return std::shared_ptr<const NvmlLibrary>(std::move(n));
}

NvmlLibrary::~NvmlLibrary() {
  if (shutdown_) shutdown_();
}

Status NvmlLibrary::check(int r, const std::string& what) const {
  if (r == 0) return Status::Ok();
  const char* text = error_string_ ? error_string_(r) : nullptr;
  return unavailable(what + ": " + (text ? text : "NVML error " + std::to_string(r)));
}

Result<NvmlDevice> NvmlLibrary::device(const std::string& pci_bus_id) const {
  NvmlDevice d = nullptr;
  LIZARD_RETURN_IF_ERROR(
      check(by_pci_bus_id_(pci_bus_id.c_str(), &d), "no NVML device at PCI bus id " + pci_bus_id));
  return d;
}

Result<double> NvmlLibrary::utilization(NvmlDevice d) const {
  Utilization u{};
  LIZARD_RETURN_IF_ERROR(check(utilization_rates_(d, &u), "nvmlDeviceGetUtilizationRates"));
  return static_cast<double>(u.gpu);
}

Result<std::pair<uint64_t, uint64_t>> NvmlLibrary::memory(NvmlDevice d) const {
  Memory m{};
  LIZARD_RETURN_IF_ERROR(check(memory_info_(d, &m), "nvmlDeviceGetMemoryInfo"));
  return std::make_pair(static_cast<uint64_t>(m.free), static_cast<uint64_t>(m.total));
}

}  // namespace lizard::cuda
