#include "dataset/dataset_source.h"

namespace lizard {

using nlohmann::json;

Result<std::vector<uint8_t>> DatasetSource::part_rows(const FieldSource& field,
                                                      const PartRows&) const {
  return internal_error("run_start: field '" + field.name + "' has no rows of its own");
}

Status DatasetSource::read_wire(const json& in, const char* key, std::string* out) {
  auto it = in.find(key);
  if (it == in.end() || it->is_null()) return Status::Ok();
  if (!it->is_string()) return invalid_argument(std::string(key) + " is not a string");
  *out = it->get<std::string>();
  return Status::Ok();
}

Status DatasetSource::read_wire(const json& in, const char* key, uint64_t* out) {
  auto it = in.find(key);
  if (it == in.end() || it->is_null()) return Status::Ok();
  if (it->is_number_unsigned())
    *out = it->get<uint64_t>();
  else if (it->is_number_integer() && it->get<int64_t>() >= 0)
    *out = static_cast<uint64_t>(it->get<int64_t>());
  else
    return invalid_argument(std::string(key) + " is not a non-negative integer");
  return Status::Ok();
}

}  // namespace lizard
