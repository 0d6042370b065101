// A stand-in for libnvidia-ml.so.1 with two GPUs of fixed load, so that
// NvmlLibrary's loading, lookups and error texts are tested on any machine.
#include <strings.h>

namespace {

struct FakeDevice {
  const char* bus_id;
  unsigned utilization;
  unsigned long long total, free;
};

constexpr unsigned long long kGiB = 1ull << 30;
FakeDevice devices[] = {{"0000:3B:00.0", 37, 80 * kGiB, 60 * kGiB},
                        {"0000:86:00.0", 90, 80 * kGiB, 5 * kGiB}};
int initialised = 0;

constexpr int kSuccess = 0, kUninitialized = 1, kNotFound = 6;

}  // namespace

extern "C" {

int nvmlInit_v2() {
  ++initialised;
  return kSuccess;
}
int nvmlShutdown() {
  --initialised;
  return kSuccess;
}
const char* nvmlErrorString(int r) {
  return r == kNotFound ? "Not Found" : r == kUninitialized ? "Uninitialized" : "Unknown Error";
}
int nvmlDeviceGetHandleByPciBusId_v2(const char* id, FakeDevice** out) {
  if (initialised <= 0) return kUninitialized;
  for (auto& d : devices)
    if (strcasecmp(d.bus_id, id) == 0) {
      *out = &d;
      return kSuccess;
    }
  return kNotFound;
}
int nvmlDeviceGetUtilizationRates(FakeDevice* d, unsigned* rates) {
  rates[0] = d->utilization;
  rates[1] = 0;
  return kSuccess;
}
int nvmlDeviceGetMemoryInfo(FakeDevice* d, unsigned long long* m) {
  m[0] = d->total;
  m[1] = d->free;
  m[2] = d->total - d->free;
  return kSuccess;
}
// For the tests: how many nvmlInit calls are not yet shut down.
int fake_nvml_open_count() {
  return initialised;
}
}
