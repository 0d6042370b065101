#include "protocol/run_spec.h"

#include "protocol/run_spec_schema.h"

namespace lizard {

std::string encode_partition_spec(const PartitionSpec& p) {
  return to_header(p).dump();
}

Result<PartitionSpec> decode_partition_spec(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded()) return invalid_argument("partition_spec: not JSON");
  return from_header<PartitionSpec>(j);
}

}  // namespace lizard
