#include "protocol/executor_info.h"

namespace lizard {

nlohmann::json ExecutorInfo::to_json() const {
  nlohmann::json j = {{"kind", kind},
                      {"name", name},
                      {"ordinal", ordinal},
                      {"sm_count", sm_count},
                      {"clock_khz", clock_khz},
                      {"total_memory", total_memory},
                      {"free_memory", free_memory},
                      {"weight", weight}};
  if (!arch.empty()) j["arch"] = arch;
  if (!driver.empty()) j["driver"] = driver;
  if (utilization >= 0) j["utilization"] = utilization;
  if (launch_delay_us >= 0) j["launch_delay_us"] = launch_delay_us;
  return j;
}

ExecutorInfo ExecutorInfo::from_json(const nlohmann::json& j) {
  ExecutorInfo e;
  if (!j.is_object()) return e;
  e.kind = j.value("kind", "");
  e.name = j.value("name", "");
  e.ordinal = j.value("ordinal", 0);
  e.arch = j.value("arch", "");
  e.sm_count = j.value("sm_count", 0);
  e.clock_khz = j.value("clock_khz", 0);
  e.total_memory = j.value("total_memory", uint64_t{0});
  e.free_memory = j.value("free_memory", uint64_t{0});
  e.driver = j.value("driver", "");
  e.weight = j.value("weight", 1.0);
  e.utilization = j.value("utilization", -1.0);
  e.launch_delay_us = j.value("launch_delay_us", -1.0);
  return e;
}

}  // namespace lizard
