#include "cli/dataset_views.h"

#include <cctype>
#include <cstdio>
#include <vector>

#include "cli/cluster_views.h"

namespace lizard {

using nlohmann::json;

namespace {

std::string str(const json& j, const char* key, const std::string& otherwise = "") {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : otherwise;
}

// "1000x8" from a shape list.
std::string shape_of(const json& shape) {
  if (!shape.is_array()) return "-";
  std::string out;
  for (const json& d : shape) out += (out.empty() ? "" : "x") + d.dump();
  return out.empty() ? "()" : out;
}

// "0..1000" from [begin, end].
std::string range_of(const json& rows) {
  if (!rows.is_array() || rows.size() != 2) return "-";
  return rows[0].dump() + ".." + rows[1].dump();
}

uint64_t bytes_of(const json& j) {
  auto it = j.find("bytes");
  if (it == j.end() || !it->is_number_integer() || it->get<int64_t>() < 0) return 0;
  return it->get<uint64_t>();
}

}  // namespace

std::string datasets_view(const json& datasets) {
  // An older server answers with the uploads alone, as a list.
  const json uploads = datasets.is_array() ? datasets : datasets.value("uploads", json::array());
  const json kept = datasets.is_object() ? datasets.value("kept", json::array()) : json::array();
  std::string out;
  if (uploads.empty()) {
    out += "no uploads\n";
  } else {
    std::vector<std::vector<std::string>> rows = {{"UPLOAD", "FORMAT", "DTYPE", "SHAPE", "SIZE"}};
    for (const json& u : uploads)
      rows.push_back({str(u, "id"), str(u, "format"), str(u, "dtype", "-"),
                      shape_of(u.value("shape", json())), bytes_text(bytes_of(u))});
    out += text_table(rows);
  }
  out += "\n";
  if (kept.empty()) return out + "no kept rows\n";
  std::vector<std::vector<std::string>> rows = {
      {"WORKER", "EXECUTOR", "SOURCE", "ROWS", "SIZE", "IN USE"}};
  uint64_t total = 0;
  for (const json& k : kept) {
    rows.push_back({str(k, "worker"), k.value("executor", json(0)).dump(),
                    str(k, "source", str(k, "description")), range_of(k.value("rows", json())),
                    bytes_text(bytes_of(k)), k.value("in_use", false) ? "yes" : "no"});
    total += bytes_of(k);
  }
  return out + text_table(rows) + "kept rows: " + bytes_text(total) + " in all\n";
}

std::string uploaded_view(const json& stored) {
  const std::string id = str(stored, "id");
  std::string what = str(stored, "format");
  if (stored.contains("dtype"))
    what += " " + str(stored, "dtype") + " " + shape_of(stored["shape"]);
  char rate[64] = "";
  if (const double r = stored.value("receive_bytes_per_s", 0.0); r > 0)
    std::snprintf(rate, sizeof rate, " at %.2f GB/s", r / 1e9);
  return "uploaded " + id + " (" + what + ", " + bytes_text(bytes_of(stored)) + rate +
         "); runs take it as --dataset NAME=upload:" + id + " until `lizard datasets rm " + id +
         "`\n";
}

std::string staged_view(const json& staged) {
  std::vector<std::vector<std::string>> rows = {{"WORKER", "EXECUTOR", "ROWS", "SIZE", "LOADED"}};
  for (const json& e : staged.value("executors", json::array()))
    rows.push_back({str(e, "worker"), e.value("executor", json(0)).dump(),
                    range_of(e.value("rows", json())), bytes_text(bytes_of(e)),
                    e.value("was_kept", false) ? "kept already" : "now"});
  return "staged " + str(staged, "path") + " (" + str(staged, "format") + ", " +
         staged.value("rows", json(0)).dump() + " rows of " +
         staged.value("width", json(1)).dump() + " " + str(staged, "dtype") + "), " +
         bytes_text(bytes_of(staged)) + "\n" + text_table(rows);
}

bool looks_like_upload_id(const std::string& arg) {
  if (arg.size() != 13 || arg[0] != 'u') return false;
  for (size_t i = 1; i < arg.size(); ++i)
    if (!std::isxdigit(static_cast<unsigned char>(arg[i])) ||
        std::isupper(static_cast<unsigned char>(arg[i])))
      return false;
  return true;
}

}  // namespace lizard
