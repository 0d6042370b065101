// The lines of a run's log as people read them (GET /runs/<id>/logs, `lizard
// logs`): each line printed during a run, tagged with where it came from.
//
//   [w1 e0 it 3] hello from block 0      worker w1, its executor 0, iteration 3
//   [w1 e0] loading                      outside an iteration (loading, the end)
//   [w1 hook it 3] converged?            a host hook on worker w1
//   [server it 3] delta 0.25             a host hook on the server
//   [w1] output cut: ...                 the bound's notice
//
//   std::string line = log_line("w1", 0, 3, "hello");   // no newline
//   if (log_line_from(line, "w1")) ...;
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lizard {

// The source of the server's own hooks' lines.
inline constexpr char kServerLogSource[] = "server";

// A line of `source` (a worker's id, or kServerLogSource); `executor` -1: a
// host hook's, and ignored for the server's; `iteration` -1: outside one.
std::string log_line(std::string_view source, int64_t executor, int64_t iteration,
                     std::string_view text);
// A line of `source` that is about the log itself (the bound's notice).
std::string log_note(std::string_view source, std::string_view text);
// Whether `line` (as log_line or log_note made it) came from `source`.
bool log_line_from(std::string_view line, std::string_view source);
// Whether `source` may name a log's source: 1 to 64 letters, digits, '_', '-' or '.'.
bool valid_log_source(std::string_view source);

}  // namespace lizard
