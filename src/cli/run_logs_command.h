// `lizard logs RUN [--worker W] [-f]`: what a run printed (GET
// /runs/<id>/logs), one tagged line each ("[w1 e0 it 3] hello from block 0").
// With `follow`, it prints the lines as they arrive until the run ends.
//
//   LogsOptions o;  o.run_id = "r4";  o.worker = "w1";  o.follow = true;
//   int exit_status = show_run_logs(api, o, &std::cout, &std::cerr);
#pragma once

#include <ostream>
#include <string>

#include "cli/server_api.h"

namespace lizard {

struct LogsOptions {
  std::string run_id;
  std::string worker;  // only this worker's lines ("server": the server's hooks'); empty: all
  bool follow = false;
  double poll_s = 1.0;  // how often a follow asks for new lines
};

// The exit status: 0 once the lines are printed (when following: once the
// run has ended), 1 when the server refused or could not be reached, 2 for
// a worker that is no id.
int show_run_logs(const ServerApi& api, const LogsOptions& o, std::ostream* out, std::ostream* err);

// The path of the run's log for `o` ("/runtimes/r4/logs?worker=w1").
std::string run_logs_path(const LogsOptions& o);

}  // namespace lizard
