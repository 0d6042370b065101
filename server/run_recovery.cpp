#include "server/run_recovery.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

namespace lizard {

RunRecovery::RunRecovery(std::shared_ptr<RunRecord> run, const DriverContext& ctx)
    : run_(std::move(run)), ctx_(ctx) {
  for (const auto& f : run_->program->image.manifest.dataset)
    per_row_values_ = per_row_values_ || !f.input;
  checkpoints_ = !per_row_values_;  // a run with per-row values starts over anyway
}

void RunRecovery::begin(RunSections* s, int64_t* it, bool* done) {
  *it = 0;
  *done = false;
  if (run_->restarted) resume_after_restart(s, it, done);
}

// A run the server was running when it stopped goes on from its checkpoint
// where rows reloaded from their sources are all it needs; where kernels keep
// per-row values of their own, or the outputs it still has to gather were
// written into the rows, it starts over.
void RunRecovery::resume_after_restart(RunSections* s, int64_t* it, bool* done) {
  const std::optional<RunCheckpoint>& cp = run_->resume_from;
  bool usable = cp && !per_row_values_ && cp->state.size() == s->state.bytes.size() &&
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
  nlohmann::json entry = {{"kind", "server_restart"},
                          {"resumed_at_iteration", *it},
                          {"reason", "the server restarted"}};
  if (cp) entry["lost_at_iteration"] = cp->iteration;  // where its last checkpoint left it
  ctx_.book->update(run_, [&](RunRecord& r) {
    r.iterations = *it;
    r.recoveries.push_back(std::move(entry));
  });
  plan_pending_ = true;
}

// A small call of its own, after the iteration's fold.
void RunRecovery::save_checkpoint(int64_t iterations, bool done, const RunSections& s) {
  if (!checkpoints_) return;
  RunCheckpoint cp;
  cp.iteration = iterations;
  cp.done = done;
  cp.state.assign(reinterpret_cast<const char*>(s.state.bytes.data()), s.state.bytes.size());
  cp.aggregate.assign(reinterpret_cast<const char*>(s.agg.bytes.data()), s.agg.bytes.size());
  ctx_.book->checkpoint(run_, std::move(cp));
}

// Rows are reloaded from their sources, so where kernels keep per-row values
// of their own the run starts over from the initial state; otherwise the
// interrupted iteration runs again.  A worker lost while the outputs are
// gathered takes its rows' outputs with it: the run starts over, since
// outputs are what kernels wrote into the rows.
void RunRecovery::after_loss(const Status& loss, bool gathering,
                             const std::vector<std::string>& lost_workers, RunSections* s,
                             int64_t* it, bool* done, const char* kind) {
  last_loss_ = loss.message();
  const bool start_over = per_row_values_ || gathering;
  const int64_t lost_at = *it;
  if (start_over) {
    s->state = s->initial_state;
    *it = 0;
    *done = false;
  }
  spdlog::warn("{}: interrupted at iteration {} ({}); re-planning and {} at iteration {}", run_->id,
               lost_at, loss.message(), start_over ? "starting over" : "resuming", *it);
  nlohmann::json entry = {{"kind", kind},
                          {"lost_at_iteration", lost_at},
                          {"workers_lost", lost_workers},
                          {"resumed_at_iteration", *it},
                          {"reason", loss.message()}};
  if (gathering) entry["gathering_outputs"] = true;
  // `iterations` keeps counting what completed until the next attempt
  // completes one of its own (a run that fails now says how far it got).
  ctx_.book->update(run_, [&](RunRecord& r) {
    entry["iterations_completed"] = r.iterations;
    r.recoveries.push_back(std::move(entry));
  });
  restart_pending_ = restart_pending_ || start_over;
  plan_pending_ = true;
}

void RunRecovery::note_plan(const std::vector<std::string>& participants) {
  if (!plan_pending_) return;
  plan_pending_ = false;
  ctx_.book->update(run_, [&](RunRecord& r) {
    if (!r.recoveries.empty()) r.recoveries.back()["workers"] = participants;
  });
}

}  // namespace lizard
