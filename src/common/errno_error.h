// errno_error: the Status for a system call that failed, naming what it was
// doing and errno's text ("mmap: Cannot allocate memory").  Read errno at
// once, before anything else can change it.
//
//   if (::ftruncate(fd, size) != 0) return errno_error("ftruncate");
#pragma once

#include <cerrno>
#include <cstring>
#include <string>

#include "common/status.h"

namespace lizard {

inline Status errno_error(const std::string& what) {
  return internal_error(what + ": " + std::strerror(errno));
}

}  // namespace lizard
