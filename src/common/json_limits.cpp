#include "common/json_limits.h"

namespace lizard {

int json_nesting_depth(std::string_view text, int stop_after) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > deepest) deepest = depth;
        if (deepest > stop_after) return deepest;
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return deepest;
}

Result<nlohmann::json> parse_json_bounded(std::string_view text, const std::string& what,
                                          int max_depth) {
  if (json_nesting_depth(text, max_depth) > max_depth)
    return invalid_argument(what + " nests arrays or objects more than " +
                            std::to_string(max_depth) + " levels deep");
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded()) return invalid_argument(what + " is not valid JSON");
  return j;
}

}  // namespace lizard
