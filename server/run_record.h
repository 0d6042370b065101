// RunRecord: everything the server knows about one run — its request, the
// executors it holds, its plan, progress, timings, result and output fields —
// and its JSON view (GET /runtimes/<id>).  Records are owned by the RunBook,
// whose mutex guards their mutable fields; the run's driver changes them
// through RunBook::update().
//
//   RunStatus s = RunStatus::kQueued;  run_status_name(s) == "queued";
//   json view = record.to_json();
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/dtype.h"
#include "plan/partition_plan.h"
#include "server/program_registry.h"
#include "server/run_phases.h"
#include "server/run_request.h"
#include "server/run_store.h"
#include "server/scheduler.h"
#include "server/transport.h"

namespace lizard {

enum class RunStatus { kQueued, kRunning, kDone, kFailed, kCancelled };

const char* run_status_name(RunStatus s);
std::optional<RunStatus> parse_run_status(const std::string& name);
inline bool is_finished(RunStatus s) {
  return s == RunStatus::kDone || s == RunStatus::kFailed || s == RunStatus::kCancelled;
}

// A field of a finished run, downloadable as .npy.
struct OutputField {
  OutputField() = default;
  OutputField(DType t, std::vector<int64_t> d, std::string b)
      : type(t), dims(std::move(d)), bytes(std::make_shared<const std::string>(std::move(b))) {}

  DType type = DType::kFloat32;
  std::vector<int64_t> dims;
  // Shared with the downloads under way, which keep them after newer runs'
  // fields push them out of memory; null once they are only in the store.
  std::shared_ptr<const std::string> bytes;
  // The bytes are in the run store: a finished run's fields are read from
  // there once let go here, so that records kept for days hold none.
  bool stored = false;

  size_t size() const { return bytes ? bytes->size() : 0; }
  std::string_view view() const { return bytes ? std::string_view(*bytes) : std::string_view(); }
};

// One completed iteration, as the record lists it.
struct IterationTiming {
  int64_t iteration = 0;
  double ms = 0, kernel_ms = 0, fold_ms = 0;
  nlohmann::json state;      // the state's scalar fields after the iteration
  bool quick_build = false;  // some executor ran it on a quick build
};

struct RunRecord {
  // Set at submission, then constant.
  std::string id;
  uint64_t seq = 0;
  std::string hash;
  std::shared_ptr<const ProgramEntry> program;
  RunRequest request;
  nlohmann::json params_json;
  std::chrono::steady_clock::time_point queued_since;
  // When it started running (left at its default for a run resumed after a restart).
  std::chrono::steady_clock::time_point running_since;

  // Guarded by the RunBook's mutex.
  RunStatus status = RunStatus::kQueued;
  std::string error;
  std::string created_at, started_at, finished_at;
  int64_t iterations = 0;
  std::vector<IterationTiming> timings;
  RunPhases phases;
  std::vector<ExecutorRef> executors;  // held now
  std::optional<PartitionPlan> plan;
  nlohmann::json result;
  std::map<std::string, OutputField> outputs;
  std::map<uint64_t, Responder> waiters;  // by the token add_waiter gave
  double elapsed_ms = 0;
  bool cancel_requested = false;
  // Ended, its finished record being stored: its status changes once stored.
  bool finishing = false;
  bool needs_executors = false;  // lost every executor: waits for the scheduler again
  // While queued: why no executor serves it yet ("no worker is connected"); empty when
  // it merely waits its turn.
  std::string waiting_for;
  // While running: the specialised param values ({"k": 4}) its workers are
  // compiling its kernels for before its first iteration, once a worker said
  // it compiles (a build found in a compile cache, or built ahead, is not);
  // null otherwise.  Shown as waiting_for "compile" with these `specialised`.
  nlohmann::json compiling;
  // The build those are: "quick" or "optimised" (shown as `compiling_build`); empty: not said.
  std::string compiling_build;
  int bypassed = 0;
  nlohmann::json recoveries = nlohmann::json::array();
  nlohmann::json restored;  // the stored record of a finished run from before a restart
  // Uploaded datasets (POST /datasets ids) its request names.
  std::vector<std::string> uploads;
  // Its request is in the run store: a restarted server resumes it.
  bool resumable = false;
  // Resumed after a server restart: from this checkpoint where there is one
  // (read by the driver alone), on as many executors as it held before
  // (`resume_executors`) when they are back before `resume_deadline`.
  bool restarted = false;
  std::optional<RunCheckpoint> resume_from;
  int64_t resume_executors = 0;
  std::chrono::steady_clock::time_point resume_deadline;
  // Rows of the current iteration each executor of the plan has finished.
  int64_t progress_iteration = -1;
  std::map<std::pair<std::string, int64_t>, int64_t> rows_done;  // by (worker, executor)

  nlohmann::json to_json() const;
  nlohmann::json progress_json() const;
  // Whether its workers report rows done within an iteration: a run of one
  // iteration (or of a program with no update hook) runs in reporting slices;
  // others report only whole iterations.
  bool reports_rows() const;
  // The most iterations it can run: 1 for a program with no update hook
  // (done after one iteration), else the request's max_iterations.
  int64_t iteration_cap() const;
};

}  // namespace lizard
