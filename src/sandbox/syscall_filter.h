// The sandbox's system-call filter (seccomp, through libseccomp): the calls
// that reach into other processes or into the kernel's configuration fail
// with EPERM, and, unless processes are allowed, so do starting a process
// (fork, vfork, clone without CLONE_THREAD, execve) and kill(); clone3
// fails with ENOSYS, so that threads are made with clone.  Every other call
// is allowed.  Applies to the calling process, for good.
//
//   Status st = filter_system_calls(/*allow_processes=*/false);
#pragma once

#include "common/status.h"

namespace lizard {

// Whether this build has the filter (libseccomp-dev when it was built).
bool syscall_filter_built();

// kUnavailable where the build or the kernel lacks seccomp.
Status filter_system_calls(bool allow_processes);

}  // namespace lizard
