// How `lizard run` and `lizard status --wait` tell the user that a run was
// interrupted and goes on: one line per entry of the record's `recoveries`
// (a lost worker, a server restart), printed above the progress once it is
// known where the run resumes and over how many workers.
//
//   RecoveryNotes notes;
//   while (...) progress.print_above(notes.new_lines(record, now_s));
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>

namespace lizard {

// "worker w2 lost at iteration 39: re-planned over 1 worker, resuming at 39",
// "server restarted at iteration 12: resuming at 12"; an entry of a server
// from before these fields: "recovered (lost worker w2): resuming at 39".
std::string recovery_line(const nlohmann::json& entry);

class RecoveryNotes {
 public:
  // The lines (each ending in '\n') of the entries of `record` not printed
  // yet.  An entry waits for the workers of its new plan until a later entry
  // follows it, the run ends, or kPlanWait_s has passed (`now_s` counts
  // seconds on any steady clock).
  std::string new_lines(const nlohmann::json& record, double now_s);

  static constexpr double kPlanWait_s = 3;

 private:
  size_t shown_ = 0;                     // entries printed
  std::optional<double> pending_since_;  // when the next entry was first seen
};

}  // namespace lizard
