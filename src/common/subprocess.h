// run_command: runs a program (no shell), capturing its stdout+stderr.  It
// starts with /dev/null as stdin and no other descriptor of ours.
//
//   Result<CommandOutput> r = run_command({"c++", "-shared", ...}, "/tmp/dir");
//   if (r.ok() && r->exit_code != 0) show(r->output);
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace lizard {

struct CommandOutput {
  int exit_code = 0;
  std::string output;  // stdout and stderr interleaved
};

// Fails only when the program cannot be started; its exit code is returned.
Result<CommandOutput> run_command(const std::vector<std::string>& argv,
                                  const std::string& cwd = "");

}  // namespace lizard
