#include "protocol/message_codecs.h"

#include <vector>

#include "dataset/dataset_source_registry.h"
#include "protocol/message_schema.h"

namespace lizard {

using nlohmann::json;

json ExecutorInfoCodec::write(const Value& v) {
  return v.to_json();
}

std::string ExecutorInfoCodec::read(const json& j, Value* out) {
  if (!j.is_object()) return " is not an object";
  try {
    *out = ExecutorInfo::from_json(j);
  } catch (const json::exception&) {
    return " has a field of the wrong type";
  }
  return {};
}

json FieldSourceCodec::write(const Value& v) {
  json j = {{"name", v.name}, {"source", "none"}};
  if (v.source) v.source->encode(v, &j);  // its own keys
  return j;
}

std::string FieldSourceCodec::read(const json& j, Value* out) {
  if (!j.is_object()) return " is not an object";
  std::string source = "none";
  if (auto it = j.find("name"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return ": name is not a string";
    out->name = it->get<std::string>();
  }
  if (auto it = j.find("source"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return ": source is not a string";
    source = it->get<std::string>();
  }
  auto kind = DatasetSourceRegistry::global().for_wire(source);
  if (!kind.ok()) return ": " + kind.status().message();
  out->source = kind.value();
  if (out->source) {
    Status read = out->source->decode(source, j, out);
    if (!read.ok()) return ": " + read.message();
  }
  return {};
}

json MeasuredCodec::write(Value v) {
  return v < 0 ? json(nullptr) : json(v);
}

std::string MeasuredCodec::read(const json& j, Value* out) {
  if (j.is_null()) return *out = -1, std::string();
  if (!j.is_number() || j.get<double>() < 0) return " is not a non-negative number or null";
  *out = j.get<double>();
  return {};
}

json KeptRowsCodec::write(const Value& v) {
  json entry = {{"key", v.key}, {"description", v.description}, {"bytes", v.bytes}};
  if (!v.source.empty())
    entry["source"] = v.source, entry["rows"] = {v.first_row, v.first_row + v.rows};
  return entry;
}

std::string KeptRowsCodec::read(const json& j, Value* out) {
  using namespace wire_schema;
  if (!j.is_object()) return " is not an object";
  auto field = [&](const char* key, auto codec, auto* member) -> std::string {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return {};
    std::string why = decltype(codec)::read(*it, member);
    return why.empty() ? why : std::string(": field \"") + key + "\"" + why;
  };
  std::vector<int64_t> range;
  for (std::string why :
       {field("key", StringCodec{}, &out->key),
        field("description", StringCodec{}, &out->description),
        field("bytes", CountCodec{}, &out->bytes), field("source", StringCodec{}, &out->source),
        field("rows", ListCodec<IntCodec>{}, &range)})
    if (!why.empty()) return why;
  if (range.empty()) return {};
  if (range.size() != 2 || range[1] < range[0]) return ": rows is not a range [begin, end]";
  out->first_row = range[0];
  out->rows = range[1] - range[0];
  return {};
}

}  // namespace lizard
