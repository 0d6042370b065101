#include "exec/gpu_selection.h"

#include <algorithm>
#include <charconv>
#include <set>

namespace lizard {

namespace {

constexpr const char* kForms = "all, none, indices such as 0 or 0,2, count=N, or auto:N";

Status bad_form(const std::string& text, const std::string& why = "") {
  return invalid_argument("--gpus '" + text + "': " + (why.empty() ? "" : why + "; ") +
                          "expected " + kForms);
}

// A non-negative decimal integer, the whole of `s`.
bool parse_index(const std::string& s, int* out) {
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, *out);
  return ec == std::errc() && p == end && *out >= 0;
}

Result<GpuSelection> parse_counted(const std::string& text, size_t prefix, GpuSelection::Kind k) {
  GpuSelection s;
  s.kind = k;
  if (!parse_index(text.substr(prefix), &s.count) || s.count < 1)
    return bad_form(text, "the count must be a positive integer");
  return s;
}

Result<GpuSelection> parse_indices(const std::string& text) {
  GpuSelection s;
  s.kind = GpuSelection::Kind::kIndices;
  std::set<int> seen;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    int index = 0;
    if (!parse_index(item, &index)) return bad_form(text);
    if (!seen.insert(index).second)
      return bad_form(text, "GPU " + std::to_string(index) + " is listed twice");
    s.indices.push_back(index);
    if (comma == std::string::npos) return s;
    start = comma + 1;
  }
}

std::string devices_on_node(size_t n) {
  return "this node has " + std::to_string(n) + " GPU" + (n == 1 ? "" : "s");
}

}  // namespace

Result<GpuSelection> parse_gpu_selection(const std::string& text) {
  if (text == "all" || text.empty()) return GpuSelection::all();
  if (text == "none") return GpuSelection::none();
  if (text.rfind("count=", 0) == 0) return parse_counted(text, 6, GpuSelection::Kind::kCount);
  if (text.rfind("auto:", 0) == 0) return parse_counted(text, 5, GpuSelection::Kind::kMostFree);
  return parse_indices(text);
}

std::string gpu_selection_text(const GpuSelection& s) {
  switch (s.kind) {
    case GpuSelection::Kind::kAll:
      return "all";
    case GpuSelection::Kind::kNone:
      return "none";
    case GpuSelection::Kind::kCount:
      return "count=" + std::to_string(s.count);
    case GpuSelection::Kind::kMostFree:
      return "auto:" + std::to_string(s.count);
    case GpuSelection::Kind::kIndices:
      break;
  }
  std::string out;
  for (int i : s.indices) out += (out.empty() ? "" : ",") + std::to_string(i);
  return out;
}

Result<std::vector<int>> choose_gpus(const GpuSelection& s,
                                     const std::vector<ExecutorLoad>& loads) {
  const size_t n = loads.size();
  std::vector<int> out;
  switch (s.kind) {
    case GpuSelection::Kind::kNone:
      return out;
    case GpuSelection::Kind::kAll:
      for (size_t i = 0; i < n; ++i) out.push_back(static_cast<int>(i));
      return out;
    case GpuSelection::Kind::kIndices:
      for (int i : s.indices)
        if (static_cast<size_t>(i) >= n)
          return invalid_argument("--gpus " + gpu_selection_text(s) + ": there is no GPU " +
                                  std::to_string(i) + ": " + devices_on_node(n) +
                                  " (indices start at 0; count=N takes the first N)");
      return s.indices;
    case GpuSelection::Kind::kCount:
    case GpuSelection::Kind::kMostFree:
      break;
  }
  if (static_cast<size_t>(s.count) > n)
    return invalid_argument("--gpus " + gpu_selection_text(s) + ": " + devices_on_node(n));
  if (s.kind == GpuSelection::Kind::kMostFree) {
    for (size_t i : rank_by_load(loads)) out.push_back(static_cast<int>(i));
  } else {
    for (size_t i = 0; i < n; ++i) out.push_back(static_cast<int>(i));
  }
  out.resize(static_cast<size_t>(s.count));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace lizard
