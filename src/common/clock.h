// Wall-clock time as it appears in records and logs.
//
//   std::string t = now_iso();   // "2026-11-22T03:04:05Z" (UTC)
#pragma once

#include <string>

namespace lizard {
std::string now_iso();
}  // namespace lizard
