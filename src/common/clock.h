// Time as lizard reports it: wall-clock stamps for records and logs, and
// elapsed milliseconds on the steady clock for timings.
//
//   std::string t = now_iso();           // "2026-11-22T03:04:05Z" (UTC)
//   auto t0 = SteadyClock::now(); ...; double ms = ms_since(t0);
#pragma once

#include <chrono>
#include <string>

namespace lizard {

using SteadyClock = std::chrono::steady_clock;

std::string now_iso();

// Milliseconds from `t` to now, on the steady clock.
inline double ms_since(SteadyClock::time_point t) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - t).count();
}

}  // namespace lizard
