#include "protocol/staging_messages.h"

namespace lizard {

using nlohmann::json;

namespace {

// The value under `key` when it has the type `is` checks; an error naming
// the message otherwise.
template <typename T, typename Is>
Status read(const json& h, const char* what, const char* key, Is is, T* out) {
  auto it = h.find(key);
  if (it == h.end() || !((*it).*is)())
    return invalid_argument(std::string(what) + ": `" + key + "` is missing or of the wrong type");
  *out = it->get<T>();
  return Status::Ok();
}

Status read_str(const json& h, const char* what, const char* key, std::string* out) {
  return read(h, what, key, &json::is_string, out);
}
Status read_int(const json& h, const char* what, const char* key, int64_t* out) {
  return read(h, what, key, &json::is_number_integer, out);
}

json parts_json(const std::vector<StagedPart>& parts, bool results) {
  json out = json::array();
  for (const StagedPart& p : parts) {
    json j = {{"executor", p.executor}, {"first_row", p.first_row}, {"rows", p.rows}};
    if (results) j["bytes"] = p.bytes, j["key"] = p.key, j["was_kept"] = p.was_kept;
    out.push_back(std::move(j));
  }
  return out;
}

Status read_parts(const json& h, const char* what, bool results, std::vector<StagedPart>* out) {
  auto it = h.find("parts");
  if (it == h.end() || !it->is_array())
    return invalid_argument(std::string(what) + ": `parts` is missing or not a list");
  for (const json& e : *it) {
    if (!e.is_object()) return invalid_argument(std::string(what) + ": a part is not an object");
    StagedPart p;
    LIZARD_RETURN_IF_ERROR(read_int(e, what, "executor", &p.executor));
    LIZARD_RETURN_IF_ERROR(read_int(e, what, "first_row", &p.first_row));
    LIZARD_RETURN_IF_ERROR(read_int(e, what, "rows", &p.rows));
    if (p.executor < 0 || p.first_row < 0 || p.rows < 0)
      return invalid_argument(std::string(what) + ": a part has a negative executor or row");
    if (results) {
      LIZARD_RETURN_IF_ERROR(read(e, what, "bytes", &json::is_number_unsigned, &p.bytes));
      LIZARD_RETURN_IF_ERROR(read_str(e, what, "key", &p.key));
      LIZARD_RETURN_IF_ERROR(read(e, what, "was_kept", &json::is_boolean, &p.was_kept));
    }
    out->push_back(std::move(p));
  }
  return Status::Ok();
}

}  // namespace

Message StageRowsMsg::to_message() const {
  json h = {{"stage_id", stage_id},
            {"path", path},
            {"format", format},
            {"dtype", dtype},
            {"width", width},
            {"data_roots", data_roots},
            {"parts", parts_json(parts, false)}};
  return Message{MessageType::kStageRows, std::move(h), ""};
}

Result<StageRowsMsg> StageRowsMsg::parse(const json& h) {
  const char* what = "stage_rows";
  if (!h.is_object()) return invalid_argument("stage_rows: header is not an object");
  StageRowsMsg m;
  LIZARD_RETURN_IF_ERROR(read_str(h, what, "stage_id", &m.stage_id));
  LIZARD_RETURN_IF_ERROR(read_str(h, what, "path", &m.path));
  LIZARD_RETURN_IF_ERROR(read_str(h, what, "format", &m.format));
  LIZARD_RETURN_IF_ERROR(read_str(h, what, "dtype", &m.dtype));
  LIZARD_RETURN_IF_ERROR(read_int(h, what, "width", &m.width));
  if (m.width < 1) return invalid_argument("stage_rows: `width` must be at least 1");
  if (auto r = h.find("data_roots"); r != h.end()) {
    if (!r->is_array()) return invalid_argument("stage_rows: `data_roots` is not a list");
    for (const json& d : *r) {
      if (!d.is_string()) return invalid_argument("stage_rows: `data_roots` holds a non-string");
      m.data_roots.push_back(d.get<std::string>());
    }
  }
  LIZARD_RETURN_IF_ERROR(read_parts(h, what, false, &m.parts));
  return m;
}

Message RowsStagedMsg::to_message() const {
  json h = {
      {"stage_id", stage_id}, {"ok", ok}, {"error", error}, {"parts", parts_json(parts, true)}};
  return Message{MessageType::kRowsStaged, std::move(h), ""};
}

Result<RowsStagedMsg> RowsStagedMsg::parse(const json& h) {
  const char* what = "rows_staged";
  if (!h.is_object()) return invalid_argument("rows_staged: header is not an object");
  RowsStagedMsg m;
  LIZARD_RETURN_IF_ERROR(read_str(h, what, "stage_id", &m.stage_id));
  LIZARD_RETURN_IF_ERROR(read(h, what, "ok", &json::is_boolean, &m.ok));
  if (h.contains("error")) LIZARD_RETURN_IF_ERROR(read_str(h, what, "error", &m.error));
  LIZARD_RETURN_IF_ERROR(read_parts(h, what, true, &m.parts));
  return m;
}

Message DropRowsMsg::to_message() const {
  return Message{MessageType::kDropRows, {{"source", source}}, ""};
}

Result<DropRowsMsg> DropRowsMsg::parse(const json& h) {
  if (!h.is_object()) return invalid_argument("drop_rows: header is not an object");
  DropRowsMsg m;
  LIZARD_RETURN_IF_ERROR(read_str(h, "drop_rows", "source", &m.source));
  if (m.source.empty()) return invalid_argument("drop_rows: `source` is empty");
  return m;
}

}  // namespace lizard
