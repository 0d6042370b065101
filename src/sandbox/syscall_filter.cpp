#include "sandbox/syscall_filter.h"

#include "sandbox/sanitized_build.h"

#include <cerrno>
#include <cstring>
#include <string>

#ifdef LIZARD_HAVE_SECCOMP
#include <sched.h>
#include <seccomp.h>
#endif

namespace lizard {

#ifdef LIZARD_HAVE_SECCOMP
namespace {

// A sanitized build's leak checker stops the process at its exit from a
// tracer of its own: a process cloned with CLONE_UNTRACED that ptraces its
// parent's threads.  There the filter allows both; Landlock still keeps
// ptrace within the sandbox's own processes.
constexpr bool kLeakCheckerTraces = kAddressSanitized;

// Calls no user code needs and that reach other processes or the kernel
// (and ptrace, but for the leak checker).
constexpr const char* kDenied[] = {
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "kcmp",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "unshare",
    "setns",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "syslog",
    "keyctl",
    "add_key",
    "request_key",
    "iopl",
    "ioperm",
    "open_by_handle_at",
    "name_to_handle_at",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "sethostname",
    "setdomainname",
    "vhangup",
    "lookup_dcookie",
};
// With processes not allowed, also these (clone: only a new process).
constexpr const char* kProcesses[] = {"fork", "vfork", "execve", "execveat", "kill"};

int deny(scmp_filter_ctx ctx, const char* name, int err) {
  const int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) return 0;  // not a call on this architecture
  return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err), nr, 0);
}

}  // namespace

bool syscall_filter_built() {
  return true;
}

Status filter_system_calls(bool allow_processes) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) return unavailable("seccomp cannot be initialised");
  int rc = 0;
  for (const char* name : kDenied) rc = rc ? rc : deny(ctx, name, EPERM);
  if (!kLeakCheckerTraces) rc = rc ? rc : deny(ctx, "ptrace", EPERM);
  if (!allow_processes) {
    for (const char* name : kProcesses) rc = rc ? rc : deny(ctx, name, EPERM);
    // A clone is a thread, or (sanitized) the leak checker's tracer.
    const scmp_datum_t kept = CLONE_THREAD | (kLeakCheckerTraces ? CLONE_UNTRACED : 0);
    if (rc == 0)
      rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                            SCMP_A0(SCMP_CMP_MASKED_EQ, kept, 0));
    if (rc == 0) rc = deny(ctx, "clone3", ENOSYS);
  }
  if (rc == 0) rc = seccomp_load(ctx);
  seccomp_release(ctx);
  if (rc != 0)
    return unavailable(std::string("the seccomp filter cannot be loaded: ") + std::strerror(-rc));
  return Status::Ok();
}

#else

bool syscall_filter_built() {
  return false;
}

Status filter_system_calls(bool) {
  return unavailable("seccomp: not built in (libseccomp-dev was missing)");
}

#endif

}  // namespace lizard
