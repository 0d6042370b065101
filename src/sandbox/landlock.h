// Landlock (the unprivileged access-control LSM, Linux 5.13 on): restricts
// the calling process, for good, to reading and writing beneath the paths
// given, and, where the kernel's Landlock ABI has them, denies TCP bind and
// connect (ABI 4) and signals and abstract Unix sockets to processes outside
// (ABI 6).  Requires no_new_privs (or CAP_SYS_ADMIN) first.
//
//   int abi = landlock_abi();   // 0: not available
//   Result<std::string> what = restrict_with_landlock(spec);   // "landlock ABI 7 (...)"
#pragma once

#include <string>

#include "common/status.h"
#include "sandbox/sandbox.h"

namespace lizard {

// The kernel's Landlock ABI version; 0 where Landlock is off or absent.
int landlock_abi();

// Applies spec's read and write paths, and the network and scope rules
// the ABI has; says what it applied.  kUnavailable where Landlock is absent.
Result<std::string> restrict_with_landlock(const SandboxSpec& spec);

}  // namespace lizard
