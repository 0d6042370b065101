#include "dataset/dataset_source_registry.h"

#include <algorithm>

namespace lizard {

using nlohmann::json;

// The built-in kinds, one file each (inline_source.cpp, ...).
std::unique_ptr<const DatasetSource> make_inline_source();
std::unique_ptr<const DatasetSource> make_path_source();
std::unique_ptr<const DatasetSource> make_upload_source();
std::unique_ptr<const DatasetSource> make_generate_source();

DatasetSourceRegistry& DatasetSourceRegistry::global() {
  static DatasetSourceRegistry* registry = [] {
    auto* r = new DatasetSourceRegistry;
    for (auto make :
         {make_inline_source, make_path_source, make_upload_source, make_generate_source})
      (void)r->add(make());
    return r;
  }();
  return *registry;
}

Status DatasetSourceRegistry::add(std::unique_ptr<const DatasetSource> source) {
  for (const auto& s : sources_) {
    if (s->key() == source->key())
      return invalid_argument("dataset source `" + source->key() + "` is already registered");
    for (const std::string& name : source->wire_names()) {
      const auto names = s->wire_names();
      if (name == "none" || std::find(names.begin(), names.end(), name) != names.end())
        return invalid_argument("run_start source '" + name + "' is already taken");
    }
  }
  sources_.push_back(std::move(source));
  return Status::Ok();
}

void DatasetSourceRegistry::remove(const std::string& key) {
  sources_.erase(std::remove_if(sources_.begin(), sources_.end(),
                                [&](const auto& s) { return s->key() == key; }),
                 sources_.end());
}

std::string DatasetSourceRegistry::request_key_list() const {
  std::string list;
  for (size_t i = 0; i < sources_.size(); ++i) {
    if (i > 0) list += i + 1 == sources_.size() ? " or " : ", ";
    list += "`" + sources_[i]->key() + "`";
  }
  return list;
}

Result<const DatasetSource*> DatasetSourceRegistry::kind_of(const json& spec,
                                                            const std::string& what) const {
  const DatasetSource* kind = nullptr;
  for (const auto& s : sources_) {
    if (!spec.contains(s->key())) continue;
    if (kind)
      return invalid_argument(what + ": give one of " + request_key_list() + ", not both `" +
                              kind->key() + "` and `" + s->key() + "`");
    kind = s.get();
  }
  if (!kind) return invalid_argument(what + ": give " + request_key_list());
  const std::vector<std::string> allowed = kind->request_keys();
  for (const auto& [key, _] : spec.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::string list;
    for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
    return invalid_argument(what + ": unknown key '" + key + "' in a `" + kind->key() +
                            "` source (expected " + list + ")");
  }
  return kind;
}

Result<ParsedSource> DatasetSourceRegistry::parse(const json& spec, const SourceField& field,
                                                  const SourceContext& context) const {
  LIZARD_ASSIGN_OR_RETURN(const DatasetSource* kind, kind_of(spec, field.what));
  LIZARD_ASSIGN_OR_RETURN(ParsedSource parsed, kind->parse(spec, field, context));
  parsed.source = kind;
  parsed.width = field.width;
  return parsed;
}

Result<const DatasetSource*> DatasetSourceRegistry::for_wire(std::string_view wire_name) const {
  if (wire_name == "none") return static_cast<const DatasetSource*>(nullptr);
  for (const auto& s : sources_)
    for (const std::string& name : s->wire_names())
      if (name == wire_name) return s.get();
  return invalid_argument("unknown source '" + std::string(wire_name) + "'");
}

FieldSource DatasetSourceRegistry::field(std::string name, std::string_view wire_name) const {
  FieldSource f;
  f.name = std::move(name);
  auto kind = for_wire(wire_name);
  if (kind.ok() && kind.value() && kind.value()->decode(wire_name, json::object(), &f).ok())
    f.source = kind.value();
  return f;
}

}  // namespace lizard
