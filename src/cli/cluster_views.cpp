#include "cli/cluster_views.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "cli/recovery_notes.h"
#include "cli/run_progress.h"

namespace lizard {

using nlohmann::json;

namespace {

constexpr size_t kLongestValueLine = 160;

}  // namespace

std::string text_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], r[i].size());
    }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i)
      line += r[i] + (i + 1 < r.size() ? std::string(width[i] - r[i].size() + 2, ' ') : "");
    out += line + "\n";
  }
  return out;
}

namespace {

std::string table(const std::vector<std::vector<std::string>>& rows) {
  return text_table(rows);
}

std::string str(const json& j, const char* key, const std::string& otherwise = "") {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : otherwise;
}

// "4x16" for a nested array of 4 arrays of 16; "5" for a flat one.
std::string shape_text(const json& v) {
  std::string out;
  const json* level = &v;
  while (level->is_array()) {
    out += (out.empty() ? "" : "x") + std::to_string(level->size());
    if (level->empty()) break;
    level = &(*level)[0];
  }
  return out;
}

// Every line of `text` with two spaces in front.
std::string indented(const std::string& text) {
  std::string out;
  size_t start = 0;
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
    out += "  " + text.substr(start, nl - start + 1);
  return out;
}

std::string value_line(const std::string& name, const json& v, const std::string& out_dir) {
  std::string text = v.dump();
  if (text.size() + name.size() + 3 <= kLongestValueLine) return name + " = " + text;
  const std::string where =
      out_dir.empty() ? "--out DIR writes " + name + ".npy" : "in " + out_dir + "/" + name + ".npy";
  return name + ": " + shape_text(v) + " values (" + where + ")";
}

std::string executor_refs(const json& executors) {
  std::string out;
  for (const json& e : executors)
    out +=
        (out.empty() ? "" : ", ") + str(e, "worker") + "/" + std::to_string(e.value("executor", 0));
  return out;
}

std::string executor_line(const json& e) {
  std::string line = "executor " + std::to_string(e.value("ordinal", 0)) + "  " + str(e, "kind") +
                     "  " + str(e, "name");
  if (e.contains("arch")) line += "  " + str(e, "arch");
  const int64_t units = e.value("sm_count", int64_t{0});
  line += "  " + std::to_string(units) + (str(e, "kind") == "cpu" ? " threads" : " SMs");
  line += "  " + bytes_text(e.value("free_memory", uint64_t{0})) + " of " +
          bytes_text(e.value("total_memory", uint64_t{0})) + " free";
  line += e.contains("run") && e["run"].is_string() ? "  running " + str(e, "run") : "  idle";
  return line;
}

std::string programs_line(const json& built, const std::map<std::string, std::string>& names) {
  if (!built.is_object() || built.empty()) return "none built";
  std::string out;
  for (const auto& [hash, state] : built.items()) {
    auto it = names.find(hash);
    std::string name = (it == names.end() ? "?" : it->second) + " (" + hash.substr(0, 12) + ")";
    std::string what = state.is_string() ? state.get<std::string>() : "did not build";
    out += (out.empty() ? "" : ", ") + name + " " + what;
  }
  return out;
}

}  // namespace

std::string bytes_text(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

std::string duration_text(double ms) {
  char buf[32];
  if (ms < 1000)
    std::snprintf(buf, sizeof buf, "%.0f ms", ms);
  else if (ms < 60000)
    std::snprintf(buf, sizeof buf, "%.2f s", ms / 1000);
  else
    return clock_text(ms / 1000);
  return buf;
}

std::optional<std::time_t> parse_utc(const std::string& iso) {
  std::tm t{};
  int consumed = 0;
  if (std::sscanf(iso.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &t.tm_year, &t.tm_mon, &t.tm_mday,
                  &t.tm_hour, &t.tm_min, &t.tm_sec, &consumed) != 6 ||
      consumed == 0)
    return std::nullopt;
  t.tm_year -= 1900;
  t.tm_mon -= 1;
  return timegm(&t);
}

namespace {

// A finished run's elapsed time, or a running one's time so far.
std::string elapsed_cell(const json& r, std::time_t now) {
  if (r.contains("elapsed_ms")) return duration_text(r["elapsed_ms"].get<double>());
  if (str(r, "status") != "running") return "-";
  auto started = parse_utc(str(r, "started_at"));
  if (!started || now < *started) return "-";
  return duration_text(1000.0 * static_cast<double>(now - *started));
}

}  // namespace

std::string runs_table(const json& runs, std::time_t now) {
  if (!runs.is_array() || runs.empty()) return "no runs\n";
  std::vector<std::vector<std::string>> rows = {
      {"ID", "STATUS", "OWNER", "PROGRAM", "ITERATIONS", "ROWS", "CREATED", "ELAPSED"}};
  for (const json& r : runs)
    rows.push_back({str(r, "runtime_id"), str(r, "status"),
                    str(r, "owner").empty() ? "-" : str(r, "owner"), str(r, "program_name"),
                    std::to_string(r.value("iterations", int64_t{0})) + "/" +
                        std::to_string(r.value("max_iterations", int64_t{0})),
                    with_thousands(r.value("rows", int64_t{0})), str(r, "created_at"),
                    elapsed_cell(r, now)});
  return table(rows);
}

std::string result_lines(const json& record, const std::string& out_dir) {
  if (!record.contains("result")) return "";
  std::string out;
  for (const char* section : {"state", "aggregate"}) {
    const json& values = record["result"].value(section, json::object());
    for (const auto& [name, v] : values.items()) out += value_line(name, v, out_dir) + "\n";
  }
  return out;
}

std::string run_summary(const json& record) {
  std::vector<std::vector<std::string>> rows;
  const std::string hash = str(record, "program");
  rows.push_back({"program", str(record, "program_name") + " (" + hash.substr(0, 12) + ")"});
  if (!str(record, "owner").empty()) rows.push_back({"owner", str(record, "owner")});
  rows.push_back({"created", str(record, "created_at")});
  if (record.contains("started_at")) rows.push_back({"started", str(record, "started_at")});
  if (record.contains("finished_at"))
    rows.push_back({"finished", str(record, "finished_at") + " (" +
                                    duration_text(record.value("elapsed_ms", 0.0)) + ")"});
  rows.push_back({"iterations", std::to_string(record.value("iterations", int64_t{0})) +
                                    " of at most " +
                                    std::to_string(record.value("max_iterations", int64_t{0}))});
  rows.push_back({"rows", with_thousands(record.value("rows", int64_t{0}))});
  if (record.contains("executors"))
    rows.push_back({"executors", executor_refs(record["executors"])});
  else if (record.contains("plan"))
    rows.push_back({"executors", executor_refs(record["plan"].value("executors", json::array()))});
  if (record.contains("recoveries"))
    for (const json& r : record["recoveries"])
      rows.push_back({"recovered", r.contains("kind")
                                       ? recovery_line(r) + " (" + str(r, "reason") + ")"
                                       : str(r, "reason")});
  if (record.contains("error")) rows.push_back({"error", str(record, "error")});
  if (record.contains("fields")) {
    std::string names;
    for (const auto& [name, _] : record["fields"].items())
      names += (names.empty() ? "" : " ") + name;
    rows.push_back({"fields", names});
  }
  std::string out = str(record, "runtime_id") + ": " + str(record, "status") + "\n";
  out += indented(table(rows));
  const std::string result = result_lines(record);
  if (!result.empty()) out += "result:\n" + indented(result);
  return out;
}

std::string workers_view(const json& clients, const json& programs) {
  if (!clients.is_array() || clients.empty())
    return "no worker is connected (start one with `lizard client -a SERVER`)\n";
  std::map<std::string, std::string> names;
  for (const json& p : programs) names[str(p, "hash")] = str(p, "name");
  std::string out;
  for (const json& w : clients) {
    const json& hw = w.value("hardware", json::object());
    out += str(w, "id") + "  " + str(hw, "hostname") + "  " + str(w, "address") + "  " +
           str(hw, "backend") + " backend, joined " + str(w, "connected_at") + "\n";
    if (!str(hw, "backend_note").empty()) out += "    note: " + str(hw, "backend_note") + "\n";
    for (const json& e : hw.value("executors", json::array()))
      out += "    " + executor_line(e) + "\n";
    out += "    programs: " + programs_line(w.value("programs", json::object()), names) + "\n";
    if (w.contains("fold_address"))  // servers that fold along trees say it
      out +=
          "    fold links: " +
          (w["fold_address"].is_string() ? w["fold_address"].get<std::string>()
                                         : "none (--fold-port -1): its runs fold at the server") +
          "\n";
  }
  return out;
}

}  // namespace lizard
