// RunDriver's side of surviving a server restart: a checkpoint after every
// completed iteration, and a run the restarted server resumes from it.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "server/run_driver.h"

namespace lizard {

// A run the server was running when it stopped goes on from its checkpoint
// (the state and aggregate after the last completed iteration) where rows
// reloaded from their sources are all it needs; where kernels keep per-row
// values of their own, or the outputs it still has to gather were written
// into the rows, it starts over.
void RunDriver::resume_after_restart(bool per_row_values, Sections* s, int64_t* it, bool* done) {
  const std::optional<RunCheckpoint>& cp = run_->resume_from;
  bool usable = cp && !per_row_values && cp->state.size() == s->state.bytes.size() &&
                cp->aggregate.size() == s->agg.bytes.size();
  const RunRequest& req = run_->request;
  const bool wants_outputs =
      std::find(req.want_output.begin(), req.want_output.end(), true) != req.want_output.end();
  if (usable && (cp->done || cp->iteration >= req.max_iterations) && wants_outputs) usable = false;
  if (usable) {
    std::memcpy(s->state.bytes.data(), cp->state.data(), cp->state.size());
    std::memcpy(s->agg.bytes.data(), cp->aggregate.data(), cp->aggregate.size());
    *it = cp->iteration;
    *done = cp->done;
  }
  spdlog::info("{}: resuming after a server restart at iteration {}", run_->id, *it);
  ctx_.book->update(run_, [&](RunRecord& r) {
    r.iterations = *it;
    r.recoveries.push_back({{"resumed_at_iteration", *it}, {"reason", "the server restarted"}});
  });
}

// Keeps the run's progress so that a restarted server resumes it here: a
// small call of its own, after the iteration's fold.
void RunDriver::save_checkpoint(int64_t iterations, bool done, const Sections& s) {
  if (!checkpoints_) return;
  RunCheckpoint cp;
  cp.iteration = iterations;
  cp.done = done;
  cp.state.assign(reinterpret_cast<const char*>(s.state.bytes.data()), s.state.bytes.size());
  cp.aggregate.assign(reinterpret_cast<const char*>(s.agg.bytes.data()), s.agg.bytes.size());
  ctx_.book->checkpoint(run_, std::move(cp));
}

}  // namespace lizard
