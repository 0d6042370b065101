// File probes: a worker's answer to probe_file (protocol/staging_messages.h),
// saying whether it can read a dataset file at a path, and which file that
// is, as a run's loading would open it: within the server's data roots and
// the worker's own, below its root without following a symlink, a regular
// file opened without blocking.  The server compares the identities its
// workers report (server/file_probe_verdict.h) to tell whether a dataset may
// go by path.
//
//   FileProbedMsg reply = probe_file(msg, worker_roots);   // quick: one open and fstat
#pragma once

#include "dataset/data_roots.h"
#include "protocol/staging_messages.h"

namespace lizard {

// `worker_roots`: the worker's own `--data-root` directories (null: none).
FileProbedMsg probe_file(const ProbeFileMsg& m, const DataRoots* worker_roots);

}  // namespace lizard
