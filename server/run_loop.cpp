#include "server/run_loop.h"

#include <algorithm>
#include <map>
#include <utility>

#include "common/clock.h"
#include "protocol/messages.h"
#include "server/run_outputs.h"
#include "server/server_metrics.h"

namespace lizard {

Status RunLoop::run(const std::string& wire_id, const std::vector<std::string>& participants,
                    const RunFoldTree& tree, RunSections* s, int64_t* it, bool* done) {
  tree_failed_ = false;
  bool loop_there = !tree.used() && can_loop_on_worker(participants);
  allow_partials(tree.senders());
  ctx_.book->update(run_, [&](RunRecord& r) {
    r.phases.worker_loop = loop_there;
    if (tree.used()) r.phases.fold_tree_senders = tree.senders().size();
  });
  // Every worker's loss fails an iteration, not only a sender's.
  channel_->watch_losses_of(tree.used() ? participants : std::vector<std::string>{});
  const auto t_iter = SteadyClock::now();
  Status st;
  while (st.ok() && *it < run_->request.max_iterations && !*done) {
    if (loop_there) {
      bool unsupported = false;
      st = loop_on_worker(wire_id, participants[0], it, s, done, &unsupported);
      loop_there = !unsupported;
      if (unsupported) ctx_.book->update(run_, [&](RunRecord& r) { r.phases.worker_loop = false; });
      continue;
    }
    st = iterate(wire_id, participants, tree, *it, s, done);
    if (st.ok()) ++*it;
  }
  record_finished_iteration(*s);
  if (st.ok())
    ctx_.book->update(run_, [&](RunRecord& r) { r.phases.iterations_ms = ms_since(t_iter); });
  return st;
}

Status RunLoop::iterate(const std::string& wire_id, const std::vector<std::string>& participants,
                        const RunFoldTree& tree, int64_t it, RunSections* s, bool* done) {
  const auto t0 = SteadyClock::now();
  // One frame for every worker, sent from where it lies; its buffer is
  // reused once the previous iteration's sends let it go.
  if (!iterate_frame_ || iterate_frame_.use_count() > 1)
    iterate_frame_ = std::make_shared<std::string>();
  const std::string_view state = {reinterpret_cast<const char*>(s->state.bytes.data()),
                                  s->state.bytes.size()};
  IterateMsg{wire_id, it}.encode_into(iterate_frame_.get(), &state, 1);
  // In a tree the senders pass it down to the workers below them.
  Status sent;
  for (const auto& id : tree.used() ? tree.senders() : participants) {
    sent = ctx_.workers->send(id, OutgoingFrame(std::string(), *iterate_frame_, iterate_frame_));
    if (!sent.ok()) {
      channel_->drop_executors_of(id);
      break;
    }
  }
  record_finished_iteration(*s);  // the previous iteration's, while this one runs
  if (!sent.ok()) return sent.with_context("iteration " + std::to_string(it));
  ctx_.book->update(run_, [&](RunRecord& r) {
    r.progress_iteration = it;
    r.rows_done.clear();
  });
  channel_->expect_answers("iteration", it, channel_->iteration_deadline_s(), tree.senders());
  // Each result is folded as soon as those of the workers before it are.
  LIZARD_RETURN_IF_ERROR(collect_and_fold(wire_id, tree.senders(), tree, it, s));
  const auto t_update = SteadyClock::now();
  LIZARD_ASSIGN_OR_RETURN(*done, s->step->finish(s->agg, &s->state, it));
  const double fold_ms = results_fold_ms_ + ms_since(t_update);
  finished_.due = true;
  finished_.timing = {it, ms_since(t0), results_kernel_ms_, fold_ms, nullptr, results_quick_build_};
  finished_.done = *done;
  return Status::Ok();
}

Status RunLoop::collect_and_fold(const std::string& wire_id, const std::vector<std::string>& from,
                                 const RunFoldTree& tree, int64_t it, RunSections* s) {
  results_.resize(from.size());
  payloads_.resize(from.size());
  if (indexed_ != from) {  // the same participants as a rule: built once
    indexed_ = from;
    participant_index_.clear();
    for (size_t k = 0; k < from.size(); ++k) participant_index_.emplace(from[k], k);
  }
  fold_order_.start(from.size());
  results_kernel_ms_ = 0;
  results_fold_ms_ = 0;
  results_quick_build_ = false;
  s->step->start(&s->agg);
  auto fold = [&](size_t k) { return fold_result(from[k], k, it, s); };
  // A failed collection names the iteration; a failed fold says it itself.
  const auto at = [it](Status st) { return st.with_context("iteration " + std::to_string(it)); };
  while (!fold_order_.done()) {
    if (Status st = channel_->check_deadlines(wire_id, from,
                                              [&](size_t k) { return fold_order_.has_arrived(k); });
        !st.ok())
      return at(st);
    auto next = channel_->next_event_from(from, &participant_index_);
    if (!next.ok()) return at(next.status());
    std::optional<DriverEvent>& ev = *next;
    if (!ev || ev->kind != DriverEvent::Kind::kResult) continue;
    const size_t k = participant_index_.at(ev->worker_id);
    if (fold_order_.has_arrived(k)) continue;
    auto view = decode_view(ev->frame);
    if (!view.ok() || view->type != MessageType::kIterationResult ||
        packed_run_id(view->packed) != wire_id)
      continue;  // an earlier attempt's
    const std::string& id = ev->worker_id;
    if (Status st = result_.read(view->packed); !st.ok())
      return at(
          channel_->refuse_message(id, "an iteration_result that does not parse: " + st.message()));
    if (result_.iteration != it)
      return at(channel_->refuse_message(
          id, "an iteration_result for iteration " + std::to_string(result_.iteration)));
    if (!result_.ok && tree.used()) {  // the error names the worker it failed on
      tree_failed_ = result_.fold_failed;
      return at(runtime_error(result_.error.empty() ? "worker " + id + ": failed" : result_.error));
    }
    if (!result_.ok)
      return at(runtime_error("worker " + id + ": " +
                              (result_.error.empty() ? std::string("failed") : result_.error)));
    if (result_.workers != tree.workers_of(id))
      return at(channel_->refuse_message(
          id, "an iteration_result folding " + std::to_string(result_.workers) +
                  " workers' results; its place in the fold tree folds " +
                  std::to_string(tree.workers_of(id))));
    results_kernel_ms_ = std::max(results_kernel_ms_, result_.kernel_ms);
    results_quick_build_ = results_quick_build_ || result_.quick_build;
    // The payload stays where it lies: moving the frame keeps its buffer.
    payloads_[k] = view->payload;
    results_[k] = std::move(ev->frame);
    LIZARD_RETURN_IF_ERROR(fold_order_.arrived(k, fold));
  }
  return Status::Ok();
}

Status RunLoop::fold_result(const std::string& worker_id, size_t k, int64_t it, RunSections* s) {
  const auto t0 = SteadyClock::now();
  const std::string_view payload = payloads_[k];
  const size_t n = s->step->partial_bytes();
  const auto [least, most] = partials_allowed_[k];
  if (n != 0 &&
      (payload.size() % n != 0 || payload.size() / n < least || payload.size() / n > most))
    return channel_->refuse_message(
        worker_id, "an aggregate of " + std::to_string(payload.size()) + " bytes; expected " +
                       (least == most ? std::to_string(least * n)
                                      : "from " + std::to_string(least * n) + " to " +
                                            std::to_string(most * n)) +
                       " (" + std::to_string(n) + " bytes per partial aggregate)");
  LIZARD_RETURN_IF_ERROR(s->step->fold_packed(&s->agg, payload, it));
  payloads_[k] = {};
  if (ctx_.frames)  // for the hub to read the next results into
    ctx_.frames->give(std::move(results_[k]));
  results_fold_ms_ += ms_since(t0);
  return Status::Ok();
}

void RunLoop::allow_partials(const std::vector<std::string>& participants) {
  std::map<std::string, size_t> executors;
  ctx_.book->update(run_, [&](RunRecord& r) {
    if (r.plan)
      for (const auto& e : r.plan->entries)
        if (e.rows > 0) ++executors[e.worker_id];
  });
  const bool custom = run_->program->image.manifest.has_custom_reducer();
  const size_t slices = run_->reports_rows() ? IterationResultMsg::kMaxProgressSlices : 1;
  partials_allowed_.clear();
  for (const auto& id : participants) {
    const size_t n = std::max<size_t>(executors[id], 1);
    partials_allowed_.push_back(custom ? std::pair{n, n * slices}
                                       : std::pair{size_t{1}, size_t{1}});
  }
}

void RunLoop::record_finished_iteration(const RunSections& s) {
  if (!finished_.due) return;
  finished_.due = false;
  IterationTiming timing = std::move(finished_.timing);
  timing.state = state_scalars(s);
  const int64_t iterations = timing.iteration + 1;
  record_iteration(std::move(timing));
  recovery_->save_checkpoint(iterations, finished_.done, s);
}

nlohmann::json RunLoop::state_scalars(const RunSections& s) const {
  return section_to_json(s.state, run_->program->image.manifest, run_->request.params,
                         /*scalars_only=*/true);
}

void RunLoop::record_iteration(IterationTiming timing) {
  if (ctx_.metrics) ctx_.metrics->observe_iteration(timing.ms, timing.kernel_ms, timing.fold_ms);
  channel_->note_iteration_ms(timing.ms);
  const bool started_over = recovery_->take_restart();
  ctx_.book->update(run_, [&](RunRecord& r) {
    if (started_over) r.timings.clear();  // the first iteration of a run started over
    r.iterations = timing.iteration + 1;
    if (started_over) r.phases.quick_build_iterations.reset();
    if (timing.quick_build)
      r.phases.quick_build_iterations = r.phases.quick_build_iterations.value_or(0) + 1;
    if (r.plan)
      for (const auto& e : r.plan->entries) r.rows_done[{e.worker_id, e.executor}] = e.rows;
    r.timings.push_back(std::move(timing));
  });
}

}  // namespace lizard
