// Parsing JSON that comes from users (request bodies) with a bound on how
// deeply arrays and objects nest, and without silently dropping duplicate
// keys.  nlohmann::json copies, compares and converts values recursively, so
// a body nested 100,000 levels deep would exhaust a thread's stack; the text
// is scanned for its depth before it is parsed, in one pass and without
// allocating.  An object that names a key twice is refused (nlohmann would
// keep the last value).  The size of a body is bounded where it is read
// (the server's --max-body).
//
//   Result<nlohmann::json> body = parse_json_bounded(text);   // 400 when too deep, not JSON,
//                                                             // or a key is repeated
//
// Functions of their input; any thread.
#pragma once

#include <nlohmann/json.hpp>

#include <string_view>

#include "common/status.h"

namespace lizard {

constexpr int kMaxJsonDepth = 64;

// The deepest nesting of arrays and objects in `text` (0 for a scalar),
// counting brackets outside strings; stops counting at `stop_after` + 1.
int json_nesting_depth(std::string_view text, int stop_after = kMaxJsonDepth);

// Parses `text` as JSON; invalid_argument when it nests deeper than
// `max_depth`, repeats a key within an object ("request body: duplicate key
// 'x'") or is not valid JSON.  `what` names the text in errors
// ("request body").
Result<nlohmann::json> parse_json_bounded(std::string_view text,
                                          const std::string& what = "request body",
                                          int max_depth = kMaxJsonDepth);

}  // namespace lizard
