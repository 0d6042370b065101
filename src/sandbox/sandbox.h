// The sandbox that a process running user code enters before it loads that
// code: a hook host (a program's host.cpp) and an executor host (its
// kernels).  It gives up, in this order:
//   - new privileges (PR_SET_NO_NEW_PRIVS) and every capability, so that a
//     daemon run as root starts its user code with none of root's powers
//     over other processes (CAP_SYS_PTRACE, CAP_KILL, CAP_DAC_OVERRIDE...);
//   - its standing when memory runs out: the kernel ends it first
//     (oom_score_adj 1000), before any daemon;
//   - with Landlock (sandbox/landlock.h): writing anywhere but beneath
//     `write_beneath`, reading anywhere but beneath `read_beneath` (where
//     `restrict_reads`), TCP bind and connect, and signals and abstract
//     Unix sockets to processes outside the sandbox;
//   - with seccomp (sandbox/syscall_filter.h): the system calls that reach
//     into other processes or the kernel (ptrace, pidfd_getfd,
//     process_vm_readv/writev, bpf, mount, module loading, ...), and, unless
//     `allow_processes`, starting processes (fork, clone without
//     CLONE_THREAD, execve) and kill().  A sanitized build allows ptrace
//     and clones with CLONE_UNTRACED, which its leak checker makes at exit;
//     Landlock still confines ptrace to the sandbox's own processes.
// A piece the kernel (or the build) lacks is left out and named in the
// report; the rest still applies.  LIZARD_SANDBOX=off in the daemon's
// environment turns the whole sandbox off, for an operator whose user code
// needs what it refuses.
//
//   SandboxSpec s;
//   s.restrict_reads = true;
//   s.read_beneath = system_read_paths();
//   s.read_beneath.push_back(library);
//   SandboxReport r = enter_sandbox(s);
//   if (!r.missing.empty()) warn(r.summary());
#pragma once

#include <string>
#include <vector>

namespace lizard {

struct SandboxSpec {
  // Reads (and executes) only beneath read_beneath; otherwise anywhere.
  bool restrict_reads = false;
  std::vector<std::string> read_beneath;
  // Writes (and creating, removing, renaming files) only beneath these;
  // writes are always restricted.
  std::vector<std::string> write_beneath;
  // fork/clone/execve allowed (a CPU executor runs the host compiler).
  bool allow_processes = false;
  // RLIMIT_DATA (heap and private mappings) in bytes; 0 leaves it.
  unsigned long long data_limit_bytes = 0;
};

struct SandboxReport {
  std::vector<std::string> applied;  // "no_new_privs", "landlock ABI 7 (...)", "seccomp", ...
  std::vector<std::string> missing;  // "seccomp: not built in (libseccomp-dev)", ...
  bool disabled = false;             // LIZARD_SANDBOX=off
  // One line: "applied: ...; missing: ..." (or that it is off).
  std::string summary() const;
};

// Enters the sandbox: for the process itself, for good.
SandboxReport enter_sandbox(const SandboxSpec& spec);

// What enter_sandbox applies on this machine (it applies nothing): for the
// daemons' start line and /ruok.
SandboxReport probe_sandbox();

// LIZARD_SANDBOX=off in the environment.
bool sandbox_disabled();

// The data limit of a hook process: 4 GiB, or 0 (none) in a build with
// AddressSanitizer, whose shadow memory counts against it.
unsigned long long hook_data_limit_bytes();

// What any process needs to read to run: the system's libraries and
// headers, the loader's cache, the time zone and device nodes such as
// /dev/null.  enter_sandbox adds the process's own /proc entry (never
// another process's).
std::vector<std::string> system_read_paths();

// Where the sanitizers' log_path (ASAN_OPTIONS, UBSAN_OPTIONS) writes their
// reports: writable in a sanitized build, so that a report is not lost.
std::vector<std::string> sanitizer_log_dirs();

}  // namespace lizard
