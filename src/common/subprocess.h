// run_command: runs a program (no shell), capturing its stdout+stderr.  It
// starts with /dev/null as stdin and no other descriptor of ours, and leads a
// process group of its own.  With a time-out, a program still running at the
// deadline is killed with its whole group (the compiler driver and the
// compiler proper, the assembler and the linker it started) and reported as
// timed out.
//
//   Result<CommandOutput> r = run_command({"c++", "-shared", ...}, "/tmp/dir", 120000);
//   if (r.ok() && r->timed_out) fail("compile timed out");
//   if (r.ok() && r->exit_code != 0) show(r->output);
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace lizard {

struct CommandOutput {
  int exit_code = 0;
  std::string output;      // stdout and stderr interleaved
  bool timed_out = false;  // killed at the deadline; exit_code is then 128 + SIGKILL
};

// Fails only when the program cannot be started; its exit code is returned.
// `timeout_ms` > 0 bounds how long the program (and its group) may run.
// `in_child`, when given, runs in the new process just before it executes
// the program (a sandbox of its own); the process is then made with fork(),
// so a caller that passes it must have no other threads.
Result<CommandOutput> run_command(const std::vector<std::string>& argv, const std::string& cwd = "",
                                  int timeout_ms = 0,
                                  void (*in_child)(const std::string& cwd) = nullptr);

}  // namespace lizard
