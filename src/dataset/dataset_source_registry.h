// DatasetSourceRegistry: the kinds of dataset source (dataset_source.h) a
// daemon knows, found by the key that names them in a run request or by the
// `source` they write in a run_start.  global() holds the built-in kinds in
// the order errors list them: values, path, upload, generate.
//
//   const auto& registry = DatasetSourceRegistry::global();
//   Result<ParsedSource> p = registry.parse(spec, field, context);  // on the server
//   Result<const DatasetSource*> k = registry.for_wire("path");     // on a worker
//
// add() and remove() change it and are not synchronised: call them before
// any run starts (tests, a daemon's start-up); lookups may then run on any
// thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dataset/dataset_source.h"

namespace lizard {

class DatasetSourceRegistry {
 public:
  DatasetSourceRegistry() = default;
  DatasetSourceRegistry(const DatasetSourceRegistry&) = delete;
  DatasetSourceRegistry& operator=(const DatasetSourceRegistry&) = delete;

  // The built-in kinds.
  static DatasetSourceRegistry& global();

  // Fails when the kind's request key or a wire name is taken.
  Status add(std::unique_ptr<const DatasetSource> source);
  // Removes the kind named `key` in requests (a no-op when none is).
  void remove(const std::string& key);

  // The kind that `spec` (a JSON object) is: the one request key it holds,
  // with no keys that kind does not take.  Errors start with `what`.
  Result<const DatasetSource*> kind_of(const nlohmann::json& spec, const std::string& what) const;
  // kind_of() and that kind's parse(), with the result's source and width set.
  Result<ParsedSource> parse(const nlohmann::json& spec, const SourceField& field,
                             const SourceContext& context) const;
  // The kind that writes `wire_name` as a run_start field's `source`;
  // nullptr for "none" (not an input field).
  Result<const DatasetSource*> for_wire(std::string_view wire_name) const;
  // A run_start field of kind `wire_name` with no other keys (nullptr source
  // when the name is unknown): what tests and fakes build fields from.
  FieldSource field(std::string name, std::string_view wire_name) const;

  // "`values`, `path`, `upload` or `generate`".
  std::string request_key_list() const;

 private:
  std::vector<std::unique_ptr<const DatasetSource>> sources_;
};

}  // namespace lizard
