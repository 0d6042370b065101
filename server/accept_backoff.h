// AcceptBackoff: what the server's listener does when accept() fails.
// Running out of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM)
// leaves the connection in the backlog, so that accepting again at once
// fails again at once: after such a failure the listener waits kRetryDelay
// before it accepts again, and serves the connections it has meanwhile.
// Other failures (a connection reset before it was accepted) are retried at
// once.  At most one line a second is logged: a warning with the number of
// failures since the last line, or a note that accepting works again.
//
//   AcceptBackoff backoff;
//   // accept() failed with errno `err`:
//   AcceptBackoff::Step step = backoff.failed(err, ec.message(), Clock::now());
//   if (!step.warning.empty()) spdlog::warn("{}", step.warning);
//   retry after step.delay;
//   // accept() succeeded:
//   if (auto note = backoff.accepted(Clock::now()); !note.empty()) spdlog::info("{}", note);
//
// Not thread-safe: the listener's strand calls it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace lizard {

class AcceptBackoff {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kRetryDelay{100};
  static constexpr std::chrono::seconds kLogInterval{1};

  struct Step {
    std::chrono::milliseconds delay{0};  // before the next accept
    std::string warning;                 // to log, when not empty
  };

  // accept() failed with `err` (an errno value; 0 if not a system error),
  // described by `message`, at `now`.
  Step failed(int err, const std::string& message, Clock::time_point now);
  // accept() succeeded at `now`: a note to log when it failed before and
  // no line was logged within the last second (else empty).
  std::string accepted(Clock::time_point now);

  // Whether `err` means the process or system ran out of a resource.
  static bool out_of_resources(int err);

 private:
  bool may_log(Clock::time_point now) const { return !logged_ || now - last_line_ >= kLogInterval; }

  bool logged_ = false;          // a line was ever logged
  Clock::time_point last_line_;  // when the last one was
  bool failing_ = false;         // failures since the last note
  uint64_t unlogged_ = 0;        // failures since the last line
};

}  // namespace lizard
