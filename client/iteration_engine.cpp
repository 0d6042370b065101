#include "client/iteration_engine.h"

#include <algorithm>

#include "common/parallel.h"
#include "program/reducers.h"
#include "protocol/messages.h"

namespace lizard {
namespace {

// Slices of an iteration whose progress is reported: enough to show it
// moving, few enough that each slice's launches stay cheap beside its work.
constexpr int64_t kMinSliceRows = 4096;
constexpr int64_t kMaxSlices = IterationResultMsg::kMaxProgressSlices;

}  // namespace

void IterationEngine::bind(Run run) {
  run_ = std::move(run);
  fan_.reset();
  slots_.clear();
  partials_.clear();
  kernel_ms_ = 0;
  on_quick_.assign(run_.executors ? run_.executors->size() : 0, 0);
  ran_on_quick_ = false;
}

void IterationEngine::began_on_quick_build(size_t i) {
  if (i < on_quick_.size()) on_quick_[i] = 1;
}

double IterationEngine::slowest_call_ms() const {
  double slowest = 0;
  for (double ms : executor_total_ms_) slowest = std::max(slowest, ms);
  return slowest;
}

Status IterationEngine::run(const SectionBuffer& state, int64_t iteration) {
  const size_t n = run_.executors->size();
  slots_.resize(n);
  executor_ms_.assign(n, 0.0);
  executor_total_ms_.assign(n, 0.0);
  bool in_processes = true;
  for (size_t i : *run_.executors) in_processes = in_processes && (*run_.all)[i]->process;
  Status ran = in_processes ? run_in_processes(iteration, state) : run_on_threads(iteration, state);
  ran_on_quick_ = std::find(on_quick_.begin(), on_quick_.end(), 1) != on_quick_.end();
  // What the kernels printed goes out ahead of the iteration's result (or error).
  if (run_.output) run_.output->flush();
  LIZARD_RETURN_IF_ERROR(ran);
  partials_.clear();
  kernel_ms_ = 0;
  for (size_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < slices_of(i); ++k) partials_.push_back(&slots_[i][k]);
    kernel_ms_ = std::max(kernel_ms_, executor_ms_[i]);
  }
  // Built-in reducers fold here (into the first slot, which the next
  // iteration overwrites); custom ones go to the aggregate hook.
  if (!run_.manifest->has_custom_reducer() && partials_.size() > 1) {
    SectionBuffer* first = &slots_[0][0];
    for (size_t j = 1; j < partials_.size(); ++j) fold_into(first, *partials_[j]);
    partials_.resize(1);
  }
  return Status::Ok();
}

int64_t IterationEngine::slices_of(size_t i) const {
  if (!run_.report_progress) return 1;
  return std::clamp<int64_t>((*run_.rows)[i] / kMinSliceRows, 1, kMaxSlices);
}

int64_t IterationEngine::slice_end(size_t i, int64_t k) const {
  return (*run_.rows)[i] * (k + 1) / slices_of(i);
}

Result<SectionBuffer*> IterationEngine::slot(size_t i, size_t k) {
  std::vector<SectionBuffer>& mine = slots_[i];
  while (mine.size() <= k) {
    LIZARD_ASSIGN_OR_RETURN(SectionBuffer a,
                            make_section(run_.manifest->aggregate, *run_.manifest, *run_.params));
    mine.push_back(std::move(a));
  }
  return &mine[k];
}

// An executor's first iteration on its optimised build says so
// (switched_build): it is off the quick build from this iteration on.
void IterationEngine::slice_done(size_t i, int64_t k, int64_t iteration,
                                 const IterationStats& stats) {
  if (stats.switched_build && i < on_quick_.size()) on_quick_[i] = 0;
  if (slices_of(i) > 1)
    run_.send(encode(ProgressMsg{run_.run_id, iteration, static_cast<int64_t>((*run_.executors)[i]),
                                 slice_end(i, k)}
                         .to_message()));
  executor_ms_[i] += stats.kernel_ms;
  executor_total_ms_[i] += stats.total_ms;
}

Status IterationEngine::run_on_threads(int64_t iteration, const SectionBuffer& state) {
  const size_t n = run_.executors->size();
  if (!fan_ || fan_->size() != n) fan_ = std::make_unique<FanOut>(n);
  return first_error(fan_->run([&](size_t i) -> Status {
    std::lock_guard<std::mutex> l(lock_of(i));
    Executor& e = *(*run_.all)[(*run_.executors)[i]]->executor;
    const int64_t slices = slices_of(i);
    for (int64_t k = 0; k < slices; ++k) {
      LIZARD_ASSIGN_OR_RETURN(SectionBuffer * a, slot(i, static_cast<size_t>(k)));
      IterationStats st;
      if (slices == 1) {
        LIZARD_RETURN_IF_ERROR(e.iterate(state, iteration, a, &st));
      } else {
        const int64_t first = k == 0 ? 0 : slice_end(i, k - 1);
        LIZARD_RETURN_IF_ERROR(
            e.iterate_rows(state, iteration, a, &st, first, slice_end(i, k) - first));
      }
      slice_done(i, k, iteration, st);
    }
    return Status::Ok();
  }));
}

// Executor processes compute at the same time without a thread each: every
// slice is sent to all of them before any answer is awaited.  Every request
// sent is answered before the next, so a failure on one executor still
// collects the others' replies and their channels stay in step.
Status IterationEngine::run_in_processes(int64_t iteration, const SectionBuffer& state) {
  const size_t n = run_.executors->size();
  // Every executor of the run is held for the whole iteration.
  struct HeldExecutors {
    IterationEngine* engine;
    size_t n;
    ~HeldExecutors() {
      for (size_t i = 0; i < n; ++i) engine->lock_of(i).unlock();
    }
  } held{this, 0};
  for (; held.n < n; ++held.n) lock_of(held.n).lock();
  auto process = [&](size_t i) -> OwnerProcessExecutor& {
    return *(*run_.all)[(*run_.executors)[i]]->process;
  };
  int64_t most = 1;
  for (size_t i = 0; i < n; ++i) most = std::max(most, slices_of(i));
  Status failed;
  for (int64_t k = 0; k < most && failed.ok(); ++k) {
    size_t sent = 0;
    sent_.assign(n, 0);  // whether executor i was sent slice k
    for (size_t i = 0; i < n; ++i) {
      const int64_t slices = slices_of(i);
      if (k >= slices) continue;
      const int64_t first = k == 0 ? 0 : slice_end(i, k - 1);
      Status st = slices == 1
                      ? process(i).send_iterate(state, iteration, 0, -1)
                      : process(i).send_iterate(state, iteration, first, slice_end(i, k) - first);
      if (!st.ok()) {
        if (failed.ok()) failed = st;
        continue;
      }
      sent_[i] = 1;
      ++sent;
    }
    for (size_t i = 0; i < n && sent > 0; ++i) {
      if (!sent_[i]) continue;
      auto a = slot(i, static_cast<size_t>(k));
      if (!a.ok()) return a.status();
      IterationStats st;
      Status got = process(i).receive_iterate(*a, &st);
      if (run_.output)
        run_.output->collect(&process(i), static_cast<int64_t>((*run_.executors)[i]), iteration);
      if (!got.ok()) {
        if (failed.ok()) failed = got;
        continue;
      }
      slice_done(i, k, iteration, st);
    }
  }
  return failed;
}

}  // namespace lizard
