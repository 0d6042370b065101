// OutputLines: what a process printed, cut into lines a person can read in a
// run's log.  Bytes go in as they arrive from a pipe, in pieces that may end
// anywhere; complete lines come out.  Each line is made safe to show: bytes
// that are neither printable ASCII, a tab nor part of valid UTF-8 become
// '?', a carriage return ends nothing, and a line longer than kMaxLineBytes
// is cut there with a note, so that binary junk or a line without end cannot
// grow without bound.
//
//   OutputLines lines;
//   lines.add(bytes, [&](std::string line) { log.push_back(std::move(line)); });
//   lines.finish(emit);   // the last line, also when it has no newline
//
// Not thread-safe.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace lizard {

class OutputLines {
 public:
  // The longest line kept; the rest of a longer one is dropped.
  static constexpr size_t kMaxLineBytes = 4096;
  using Emit = std::function<void(std::string line)>;

  // Adds `bytes`; calls `emit` with each line they complete (without its newline).
  void add(std::string_view bytes, const Emit& emit);
  // Emits the line begun and not ended, if any.
  void finish(const Emit& emit);

 private:
  void end_line(const Emit& emit);

  std::string line_;      // the line so far, raw
  size_t cut_ = 0;        // bytes of the line dropped past kMaxLineBytes
  bool pending_ = false;  // a line has begun (maybe empty so far after a '\r')
};

// Writes what a child process printed outside any run to the daemon's log through
// `log`, line by line, at most kMaxLoggedLines of it; then one line saying
// how many more there were.
inline constexpr size_t kMaxLoggedLines = 100;
void log_lines_of(std::string_view printed, const OutputLines::Emit& log);

// `raw` with every byte that is not printable ASCII, a tab or part of valid
// UTF-8 replaced by '?'.
std::string printable_text(std::string_view raw);

}  // namespace lizard
