#include "cli/recovery_notes.h"

#include <cstdint>

namespace lizard {

using nlohmann::json;

namespace {

std::string workers_text(const json& ids) {
  if (!ids.is_array() || ids.empty()) return "a worker";
  std::string out = ids.size() == 1 ? "worker " : "workers ";
  for (size_t i = 0; i < ids.size(); ++i)
    out += (i == 0 ? "" : ", ") + (ids[i].is_string() ? ids[i].get<std::string>() : ids[i].dump());
  return out;
}

// "resuming at 39", or "starting over at iteration 0" where the run starts over.
std::string resumed_text(const json& entry) {
  const int64_t resumed = entry.value("resumed_at_iteration", int64_t{0});
  const int64_t lost = entry.value("lost_at_iteration", int64_t{-1});
  if (resumed == 0 && lost != 0) return "starting over at iteration 0";
  return "resuming at " + std::to_string(resumed);
}

std::string plan_text(const json& entry) {
  if (!entry.contains("workers") || !entry["workers"].is_array()) return "re-planning, ";
  const size_t n = entry["workers"].size();
  return "re-planned over " + std::to_string(n) + (n == 1 ? " worker, " : " workers, ");
}

std::string lost_at_text(const json& entry) {
  if (entry.value("gathering_outputs", false)) return " while its outputs were gathered";
  if (!entry.contains("lost_at_iteration")) return "";
  return " at iteration " + std::to_string(entry.value("lost_at_iteration", int64_t{0}));
}

// Known where the run goes on: a lost worker's entry once its new plan is
// made; a restart's and an older server's entry at once.
bool entry_complete(const json& entry) {
  const std::string kind = entry.value("kind", "");
  return (kind != "worker_lost" && kind != "fold_tree_failed") || entry.contains("workers");
}

}  // namespace

std::string recovery_line(const json& entry) {
  const std::string kind = entry.value("kind", "");
  if (kind == "worker_lost")
    return workers_text(entry.value("workers_lost", json::array())) + " lost" +
           lost_at_text(entry) + ": " + plan_text(entry) + resumed_text(entry);
  if (kind == "fold_tree_failed")
    return "the fold tree failed" + lost_at_text(entry) + " (" +
           entry.value("reason", std::string("no reason given")) +
           "): the server folds the results, " + resumed_text(entry);
  if (kind == "server_restart")
    return "server restarted" + lost_at_text(entry) + ": " + resumed_text(entry);
  return "recovered (" + entry.value("reason", std::string("no reason given")) + "): resuming at " +
         std::to_string(entry.value("resumed_at_iteration", int64_t{0}));
}

std::string RecoveryNotes::new_lines(const json& record, double now_s) {
  const json entries = record.value("recoveries", json::array());
  if (!entries.is_array()) return "";
  const std::string status = record.value("status", "");
  const bool ended = status == "done" || status == "failed" || status == "cancelled";
  std::string out;
  while (shown_ < entries.size()) {
    const json& entry = entries[shown_];
    const bool last = shown_ + 1 == entries.size();
    if (last && !ended && !entry_complete(entry)) {
      if (!pending_since_) pending_since_ = now_s;
      if (now_s - *pending_since_ < kPlanWait_s) break;
    }
    out += recovery_line(entry) + "\n";
    ++shown_;
    pending_since_.reset();
  }
  return out;
}

}  // namespace lizard
