// The codecs of header values that are more than a plain JSON type (see
// protocol/message_schema.h for what a codec is): an executor as GET
// /clients shows it, a run_start field's source, a measurement that may be
// unknown, and an entry of an executor's kept rows.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "dataset/dataset_source.h"
#include "protocol/executor_info.h"
#include "protocol/messages.h"

namespace lizard {

// ExecutorInfo's own JSON (protocol/executor_info.h).
struct ExecutorInfoCodec {
  using Value = ExecutorInfo;
  static nlohmann::json write(const Value& v);
  static std::string read(const nlohmann::json& j, Value* out);
  static std::string type() { return "executor"; }
};

// `name`, `source` (a kind of dataset/dataset_source_registry.h, "none" by
// default) and that kind's own keys.
struct FieldSourceCodec {
  using Value = FieldSource;
  static nlohmann::json write(const Value& v);
  static std::string read(const nlohmann::json& j, Value* out);
  static std::string type() { return "field_source"; }
};

// A non-negative measurement; unknown (< 0) is null.
struct MeasuredCodec {
  using Value = double;
  static nlohmann::json write(Value v);
  static std::string read(const nlohmann::json& j, Value* out);
  static std::string type() { return "number or null"; }
};

// {key, description, bytes}, with `source` and `rows` [begin, end) when the
// source is known.
struct KeptRowsCodec {
  using Value = KeptRowsEntry;
  static nlohmann::json write(const Value& v);
  static std::string read(const nlohmann::json& j, Value* out);
  static std::string type() { return "kept_rows"; }
};

}  // namespace lizard
