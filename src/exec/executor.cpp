#include "exec/executor.h"

#include <algorithm>

namespace lizard {

CompileStats combine_compile_stats(const std::vector<CompileStats>& each) {
  CompileStats out;
  for (const CompileStats& c : each) {
    out.compile_ms = std::max(out.compile_ms, c.compile_ms);
    out.cache_hit = out.cache_hit && c.cache_hit;
  }
  return out;
}

Status read_file_fields(PartitionData* data, int threads) {
  for (size_t k = 0; k < data->file_rows.size() && k < data->fields.size(); ++k) {
    if (!data->from_file(k)) continue;
    FileRows& rows = data->file_rows[k];
    std::vector<uint8_t>& field = data->fields[k];
    field.resize(static_cast<size_t>(rows.size));
    LIZARD_RETURN_IF_ERROR(read_file_rows(rows, field.data(), threads));
    rows = FileRows{};  // the rows are in `fields` now
  }
  return Status::Ok();
}

Status Executor::keep_file_rows(const std::string& key, const FileRows& where) {
  (void)where;
  return Status(Code::kConflict, info().name + " keeps no rows for later runs (rows " + key + ")");
}

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
