// `lizard run` and `lizard status --wait`: submit a run and follow it to its
// end, showing progress, then print its result and write its fields.
//
// run_program() resolves the program (registering a directory), stages the
// datasets (dataset_staging.h), submits the request, and, unless detached,
// follows the run.  follow_run() polls GET /runtimes/<id> until the run ends,
// and shows what the run prints (GET /runtimes/<id>/logs) above its progress.
// Ctrl-C while following cancels the run (a second Ctrl-C stops waiting).
// Exit status: 0 when the run is done; 1 when it failed or was cancelled, or
// the server refused or could not be reached; 130 after Ctrl-C.
//
//   Console console{&std::cout, &std::cerr, isatty(2) != 0};
//   return run_program(api, options, console);
#pragma once

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>

#include "cli/dataset_staging.h"
#include "cli/run_spec.h"
#include "cli/server_api.h"

namespace lizard {

// Where results (out) and progress and notes (err) go.
struct Console {
  std::ostream* out;
  std::ostream* err;
  bool terminal = false;  // err is a terminal: redraw one progress line
};

struct FollowOptions {
  std::string out_dir;    // write the run's fields here as .npy when it is done
  bool json = false;      // print the final record as JSON instead of a summary
  bool quiet = false;     // no progress
  int lost_server_s = 5;  // give up after the server is unreachable this long
};

struct RunOptions {
  std::string program;  // a directory or a checksum
  RunArgs spec;
  FileDelivery files = FileDelivery::kChoose;  // how dataset files reach the cluster
  bool detach = false;                         // print the run id once it is queued and exit
  bool keep_uploads = false;                   // leave uploaded datasets on the server afterwards
  int build_timeout_s = 900;
  // How long to wait for a server that refuses connections (one still
  // starting, as when a script starts it just before the run).
  double server_wait_s = 10;
  FollowOptions follow;
};

int run_program(const ServerApi& api, const RunOptions& options, const Console& console);

int follow_run(const ServerApi& api, const std::string& id, const FollowOptions& options,
               const Console& console);

// Downloads every field the record lists into `dir` (created if need be).
Status write_fields(const ServerApi& api, const nlohmann::json& record, const std::string& dir,
                    std::ostream* log);

}  // namespace lizard
