// RunRequest: the body of POST /runtime/<hash>, checked against the program's
// manifest before anything is queued (params, dataset sources and their row
// counts, initial state, iteration cap).  Every error is a 400 naming the
// offending key, a 413 when the sizes the params imply pass the limits, or a
// 403 for a dataset path outside the server's data roots; sizes are checked
// before anything is allocated.  A function of its inputs with no state of its own (it
// reads the files a request names), called from any thread.
//
//   Result<nlohmann::json> body = parse_json_bounded(text);   // common/json_limits.h
//   Result<RunRequest> r = parse_run_request(image, *body, uploads, limits);
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "dataset/data_roots.h"
#include "dataset/dataset_source.h"
#include "dataset/file_format.h"
#include "exec/executor.h"
#include "protocol/run_spec.h"

namespace lizard {

// How many executors a run needs (min) and may use (max; 0: every one free
// when it starts); with `gpus_only` (the request said "gpus") only GPUs
// count, and each must have `min_free_memory` bytes free.
struct ExecutorDemand {
  int64_t min = 1;
  int64_t max = 0;
  bool gpus_only = false;
  uint64_t min_free_memory = 0;
};

struct RunRequest {
  ParamValues params;
  // What every worker of the run is told (protocol/run_spec.h): the program,
  // its params, the run's values and the version of each file it names by
  // path (pinned as its rows were counted); the server adds its data roots
  // and each worker's deliveries when the run starts.
  RunSpec spec;
  std::vector<ParsedSource> dataset;  // manifest.dataset order (dataset/dataset_source.h)
  int64_t rows = 0;
  std::optional<SectionBuffer> state;  // initial state when given
  int64_t max_iterations = 0;
  std::vector<bool> want_output;  // manifest.dataset order: gather this output field
  ExecutorDemand executors;
  // Seconds the run may run, from its start on its executors to its end
  // (0: the server's --run-timeout-s); past it the run fails and its
  // kernels are stopped.
  double timeout_s = 0;
  // Who submitted it: the server sets "owner" to the caller's name, in place
  // of any the body gave (users/user_directory.h); "" for runs from before
  // owners were kept.
  std::string owner;
  // Among its owner's queued runs, higher first ("priority", default 0);
  // other users' runs are ordered by fair share (server/scheduler.h).
  int64_t priority = 0;
  // Users who may read its result, fields and logs besides its owner
  // ("share": ["bob"]; "*": every user).
  std::vector<std::string> share;
};

// What one run request may ask of the server.
struct RunRequestLimits {
  uint64_t max_state_bytes = uint64_t{1} << 30;  // state + aggregate of one run
  const DataRoots* data_roots = nullptr;         // dataset paths must lie inside; null: any
};

// Where a run's rows come from, as the start of the keys executors keep
// them under (dataset/file_rows_key.h, an upload's id): for the scheduler's
// preference for executors that keep them.
std::vector<std::string> row_sources(const RunRequest& r);

// Frees what `r` carried inline: its rows (`values` sources) and its initial
// state; returns how many bytes.  Once its run has ended nothing reads
// them, while its record may stay for days (--keep-runs).
size_t drop_inline_rows(RunRequest* r);

// Reads file headers (or scans text files) to count rows; may block on I/O.
Result<RunRequest> parse_run_request(const ProgramImage& image, const nlohmann::json& body,
                                     const UploadLookup& uploads = nullptr,
                                     const RunRequestLimits& limits = {});

}  // namespace lizard
