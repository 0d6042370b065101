// AbortedRuns: the runs (attempts, by wire id) the server aborted.  The
// server sends run_abort ahead of the frames still queued for the worker, so
// a run cancelled while it loads can see its abort arrive before its
// run_start (or before its second one, sent with the uploaded rows the first
// found missing), and its uploaded rows after it: those must start nothing,
// or the session would hold its executors for a run the server has
// forgotten, and every later run on them would wait for it in vain.  The
// daemon notes each abort, refuses a later run_start of the run and drops
// the rows that follow; the list is bounded and forgotten with the
// connection (an attempt is never started again under its wire id).
//
//   AbortedRuns aborted;
//   aborted.note("r56.0");                 // a run_abort
//   if (aborted.contains(run_id)) ...;      // a run_start or data_chunk after it
//   aborted.clear();                        // the connection ended
#pragma once

#include <cstddef>
#include <deque>
#include <set>
#include <string>

namespace lizard {

class AbortedRuns {
 public:
  static constexpr size_t kKept = 1024;  // the latest aborts remembered

  void note(const std::string& wire_id) {
    if (!ids_.insert(wire_id).second) return;
    order_.push_back(wire_id);
    if (order_.size() <= kKept) return;
    ids_.erase(order_.front());
    order_.pop_front();
  }
  bool contains(const std::string& wire_id) const { return ids_.count(wire_id) > 0; }
  void clear() {
    ids_.clear();
    order_.clear();
  }

 private:
  std::set<std::string> ids_;
  std::deque<std::string> order_;  // oldest first
};

}  // namespace lizard
