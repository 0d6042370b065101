// RunLoop's side of a loop driven by the run's one worker: the worker runs
// the iterations back to back with the same IterationStep the server's
// iterate() calls, and reports each iteration's aggregate and new state.
// They are recorded as they come, so that should the worker be lost, the
// run resumes from the last reported iteration as it does from iterate().
#include <cstring>

#include "protocol/messages.h"
#include "server/run_loop.h"

namespace lizard {

bool RunLoop::can_loop_on_worker(const std::vector<std::string>& participants) const {
  // A custom reducer folds through the server's aggregate hook.
  return ctx_.worker_loop && participants.size() == 1 &&
         !run_->program->image.manifest.has_custom_reducer();
}

Status RunLoop::loop_on_worker(const std::string& wire_id, const std::string& worker, int64_t* it,
                               RunSections* s, bool* done, bool* unsupported) {
  const RunRequest& req = run_->request;
  const std::string frame =
      encode(LoopMsg{wire_id, *it, req.max_iterations, ctx_.hooks.call_timeout_ms}.to_message(
          std::string(s->state.bytes.begin(), s->state.bytes.end())));
  Status sent = ctx_.workers->send(worker, frame);
  if (!sent.ok()) {
    channel_->drop_executors_of(worker);
    return sent.with_context("iteration " + std::to_string(*it));
  }
  const size_t agg_bytes = s->agg.bytes.size(), state_bytes = s->state.bytes.size();
  while (!*done) {
    ctx_.book->update(run_, [&](RunRecord& r) {
      r.progress_iteration = *it;
      r.rows_done.clear();
    });
    channel_->expect_answers("iteration", *it, channel_->iteration_deadline_s(), {worker});
    auto got = channel_->collect(wire_id, MessageType::kLoopStep, {worker}, /*keep_failures=*/true);
    if (!got.ok()) return got.status().with_context("iteration " + std::to_string(*it));
    const Message& msg = got->at(worker);
    auto step = LoopStepMsg::parse(msg.packed);
    if (!step.ok())
      return channel_->refuse_message(
          worker, "a loop_step that does not parse: " + step.status().message());
    if (!step->ok && step->unsupported) {
      *unsupported = true;
      return Status::Ok();
    }
    if (!step->ok)
      return runtime_error("worker " + worker + ": " + step->error)
          .with_context("iteration " + std::to_string(step->iteration));
    if (step->iteration != *it)
      return channel_
          ->refuse_message(worker, "a loop_step for iteration " + std::to_string(step->iteration))
          .with_context("iteration " + std::to_string(*it));
    if (msg.payload.size() != agg_bytes + state_bytes)
      return channel_
          ->refuse_message(worker, "a loop_step of " + std::to_string(msg.payload.size()) +
                                       " bytes; expected " +
                                       std::to_string(agg_bytes + state_bytes))
          .with_context("iteration " + std::to_string(*it));
    if (agg_bytes) std::memcpy(s->agg.bytes.data(), msg.payload.data(), agg_bytes);
    if (state_bytes)
      std::memcpy(s->state.bytes.data(), msg.payload.data() + agg_bytes, state_bytes);
    record_iteration(
        {*it, step->ms, step->kernel_ms, step->fold_ms, state_scalars(*s), step->quick_build});
    ++*it;
    *done = step->last;
    recovery_->save_checkpoint(*it, *done, *s);
  }
  return Status::Ok();
}

}  // namespace lizard
