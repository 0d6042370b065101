#include "server/run_record.h"

#include "server/run_files.h"

namespace lizard {

using nlohmann::json;

const char* run_status_name(RunStatus s) {
  switch (s) {
    case RunStatus::kQueued:
      return "queued";
    case RunStatus::kRunning:
      return "running";
    case RunStatus::kDone:
      return "done";
    case RunStatus::kFailed:
      return "failed";
    case RunStatus::kCancelled:
      return "cancelled";
  }
  return "failed";
}

std::optional<RunStatus> parse_run_status(const std::string& name) {
  for (RunStatus s : {RunStatus::kQueued, RunStatus::kRunning, RunStatus::kDone, RunStatus::kFailed,
                      RunStatus::kCancelled})
    if (name == run_status_name(s)) return s;
  return std::nullopt;
}

bool RunRecord::reports_rows() const {
  const bool has_update = program && program->hooks && program->hooks->has_update();
  return request.max_iterations == 1 || !has_update;
}

int64_t RunRecord::iteration_cap() const {
  const bool one_pass = program && program->hooks && !program->hooks->has_update();
  return one_pass ? 1 : request.max_iterations;
}

json RunRecord::progress_json() const {
  json executors_json = json::array();
  int64_t done = 0;
  if (plan)
    for (const auto& e : plan->entries) {
      auto it = rows_done.find({e.worker_id, e.executor});
      const int64_t n = it == rows_done.end() ? 0 : it->second;
      done += n;
      executors_json.push_back(
          {{"worker", e.worker_id}, {"executor", e.executor}, {"rows", e.rows}, {"rows_done", n}});
    }
  return {{"iteration", progress_iteration},
          {"rows", request.rows},
          {"rows_done", done},
          {"rows_reported", reports_rows()},
          {"executors", executors_json}};
}

json RunRecord::to_json() const {
  if (!restored.is_null()) return restored;
  json t = json::array();
  for (const auto& it : timings) {
    json e = {{"iteration", it.iteration},
              {"ms", it.ms},
              {"kernel_ms", it.kernel_ms},
              {"fold_ms", it.fold_ms}};
    if (!it.state.empty()) e["state"] = it.state;
    t.push_back(std::move(e));
  }
  json j = {{"runtime_id", id},
            {"program", hash},
            {"program_name", program ? program->image.manifest.name : ""},
            {"status", run_status_name(status)},
            {"owner", request.owner},
            {"priority", request.priority},
            {"share", request.share},
            {"params", params_json},
            {"rows", request.rows},
            {"max_iterations", iteration_cap()},
            {"seed", request.spec.run_seed},
            {"iterations", iterations},
            {"created_at", created_at},
            {"timings", t},
            {"phases", phases.to_json()}};
  json demand = {{"min", request.executors.min}};
  if (request.executors.max > 0) demand["max"] = request.executors.max;
  if (request.executors.gpus_only) demand["gpus"] = true;
  if (request.executors.min_free_memory > 0)
    demand["min_free_memory"] = request.executors.min_free_memory;
  j["executors_requested"] = demand;
  if (!executors.empty()) {
    j["executors"] = json::array();
    for (const auto& e : executors)
      j["executors"].push_back({{"worker", e.worker_id}, {"executor", e.index}});
  }
  if (status == RunStatus::kQueued && !waiting_for.empty()) j["waiting_for"] = waiting_for;
  if (status == RunStatus::kRunning && !compiling.is_null()) {
    j["waiting_for"] = "compile";
    j["specialised"] = compiling;
    if (!compiling_build.empty()) j["compiling_build"] = compiling_build;
  }
  if (!started_at.empty()) j["started_at"] = started_at;
  if (!finished_at.empty()) {
    j["finished_at"] = finished_at;
    j["elapsed_ms"] = elapsed_ms;
  }
  if (!request.spec.files.empty()) j["files"] = pinned_files_json(request.spec.files);
  if (plan) j["plan"] = plan->to_json();
  if (plan && progress_iteration >= 0) j["progress"] = progress_json();
  if (!recoveries.empty()) j["recoveries"] = recoveries;
  if (!error.empty()) j["error"] = error;
  if (!result.is_null()) j["result"] = result;
  if (!outputs.empty()) {
    j["fields"] = json::object();
    for (const auto& [n, _] : outputs) j["fields"][n] = "/runtimes/" + id + "/fields/" + n + ".npy";
  }
  return j;
}

}  // namespace lizard
