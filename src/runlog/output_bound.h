// OutputBound: how much of what one source (a worker, or the server's hooks)
// printed during a run is kept.  Lines are admitted while their bytes stay
// within the bound; from the first one that does not, every later line is
// counted and dropped, and cut_notice() gives the one line that says how
// much was cut.  Every daemon that keeps a run's output holds one per source
// and run, so that a kernel printing without end costs a run at most the
// bound, never the daemon's memory or disk.
//
//   OutputBound bound(kRunOutputBytes);
//   if (bound.admit(line.size() + 1)) keep(line); // +1: its newline
//   if (bound.cut_lines() > 0) keep(bound.cut_notice("per run per worker"));
//
// Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace lizard {

// What one worker keeps of one run's output, and the server of its hooks'.
inline constexpr uint64_t kRunOutputBytes = uint64_t{1} << 20;

class OutputBound {
 public:
  explicit OutputBound(uint64_t limit_bytes = kRunOutputBytes) : limit_(limit_bytes) {}

  // Whether a line of `bytes` is kept; once one is not, none is.
  bool admit(uint64_t bytes);
  // Lines not kept, and counts taken from elsewhere (a worker's own cut).
  void add_cut(uint64_t lines, uint64_t bytes);
  uint64_t kept_bytes() const { return kept_; }
  uint64_t cut_lines() const { return cut_lines_; }
  uint64_t cut_bytes() const { return cut_bytes_; }
  // "output cut: 120 more lines (5.2 MiB) past the 1 MiB kept per run per worker"
  std::string cut_notice(const std::string& per_what) const;

 private:
  uint64_t limit_;
  uint64_t kept_ = 0;
  bool full_ = false;
  uint64_t cut_lines_ = 0, cut_bytes_ = 0;
};

// 1536 → "1.5 KiB", 3 → "3 bytes".
std::string byte_size_text(uint64_t bytes);

}  // namespace lizard
