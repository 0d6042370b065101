// RunPhases: where a run's time went before and around its iterations, and
// how its loading went — the `phases` object of its record (GET
// /runtimes/<id>).  Each field is set once its phase is over, and the JSON
// view names only those set, under the keys docs/rest-api.md lists.
//
//   r.phases.loading_ms = ms_since(t_load);
//   json view = r.phases.to_json();            // {"loading_ms": 5.1, ...}
//   RunPhases back = RunPhases::from_json(view);
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>

namespace lizard {

struct RunPhases {
  std::optional<double> queued_ms;    // accepted to placed
  std::optional<double> planning_ms;  // the rows planned over the executors
  std::optional<double> loading_ms;   // rows loaded on every executor
  // The longest per-run compile on any worker (0 when none), and whether
  // every worker found its build in a cache.
  std::optional<double> compile_ms;
  std::optional<bool> compile_cache_hit;
  // Set when some executor began the run on a quick build of its kernels
  // and switched to the optimised build between iterations once it compiled.
  std::optional<bool> quick_build;
  // How many of its iterations some executor ran on a quick build.
  std::optional<uint64_t> quick_build_iterations;
  std::optional<bool> uploads_cached;       // runs over uploads: every worker had the rows
  std::optional<uint64_t> file_bytes_read;  // runs over files: bytes read from them
  std::optional<uint64_t> file_bytes_kept;  // ... and found kept on the executors
  std::optional<bool> worker_loop;          // the run's one worker drove its iterations
  // Its workers folded their results along a tree (plan/fold_tree.h): how
  // many of them sent the server theirs (folded with those below them).
  std::optional<uint64_t> fold_tree_senders;
  // Its tree failed (a worker could not reach the one above it, or sent
  // nothing in time): from then on it folded at the server.
  std::optional<bool> fold_tree_failed;
  std::optional<double> iterations_ms;  // the loop, once it is over
  // The run ended on its workers and its output fields gathered into the
  // record, and their bytes (runs that asked for output fields).
  std::optional<double> outputs_ms;
  std::optional<uint64_t> output_bytes;

  nlohmann::json to_json() const;
  // The fields of `j` this struct knows, of the right type; the rest are left unset.
  static RunPhases from_json(const nlohmann::json& j);
};

}  // namespace lizard
