#include "exec/executor.h"

#include <algorithm>
#include <cstring>

namespace lizard {

CompileStats combine_compile_stats(const std::vector<CompileStats>& each) {
  CompileStats out;
  for (const CompileStats& c : each) {
    out.compile_ms = std::max(out.compile_ms, c.compile_ms);
    out.cache_hit = out.cache_hit && c.cache_hit;
    out.quick_build = out.quick_build || c.quick_build;
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

OutputFieldBytes OutputFieldBytes::own(std::vector<std::vector<uint8_t>> fields) {
  auto held = std::make_shared<std::vector<std::vector<uint8_t>>>(std::move(fields));
  OutputFieldBytes out;
  for (const auto& f : *held)
    out.fields.emplace_back(reinterpret_cast<const char*>(f.data()), f.size());
  out.owner = std::move(held);
  return out;
}

Result<OutputFieldBytes> Executor::end_run_in_place(bool want_outputs) {
  LIZARD_ASSIGN_OR_RETURN(auto fields, end_run(want_outputs));
  return OutputFieldBytes::own(std::move(fields));
}

Status Executor::end_run_into(const std::vector<char*>& to) {
  LIZARD_ASSIGN_OR_RETURN(auto fields, end_run(true));
  for (size_t k = 0; k < fields.size() && k < to.size(); ++k)
    if (to[k] && !fields[k].empty()) std::memcpy(to[k], fields[k].data(), fields[k].size());
  return Status::Ok();
}

Status Executor::keep_file_rows(const std::string& key, const FileRows& where) {
  (void)where;
  return Status(Code::kConflict, info().name + " keeps no rows for later runs (rows " + key + ")");
}

}  // namespace lizard
