// IterationStep: what happens to an iteration once its partial aggregates
// are in, the same wherever the loop is driven (the server's RunLoop, or a
// worker that drives a run placed on it alone).  The aggregate starts at the
// reducers' identity; each partial is folded into it with the built-in
// reducers and then, where the program has custom reducers, its
// `aggregate` hook — in the order the caller gives them, which is plan
// order, so that the aggregate is bit for bit the same whoever folds it (a
// float sum depends on its order).  Then `update_global_state` makes the
// next state, and the stop rule says whether the run ends: the program's
// hook said done (a program without the hook is done after one iteration),
// or the iteration cap is reached.
//
//   LIZARD_ASSIGN_OR_RETURN(IterationStep step,
//                           IterationStep::make(m, params, hooks, max_iterations));
//   step.start(&agg);
//   for (each partial, in plan order) LIZARD_RETURN_IF_ERROR(step.fold(&agg, partial, it));
//   LIZARD_ASSIGN_OR_RETURN(bool stop, step.finish(agg, &state, it));
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "hooks/iteration_hooks.h"
#include "program/layout.h"
#include "program/manifest.h"

namespace lizard {

class IterationStep {
 public:
  // `hooks` (may be null: a program without hooks) must outlive the step;
  // `max_iterations` is the run's cap.  Fails when the aggregate's layout
  // cannot be made from `params`.
  static Result<IterationStep> make(const Manifest& m, const ParamValues& params,
                                    IterationHooks* hooks, int64_t max_iterations);

  // Sets `agg` to the reducers' identity, ready for an iteration's partials.
  void start(SectionBuffer* agg) const;
  // Folds one partial aggregate into `agg`.
  Status fold(SectionBuffer* agg, const SectionBuffer& partial, int64_t iteration);
  // Folds the partial aggregates that lie back to back in `bytes` (one
  // worker's reply), in order.  Allocates nothing.
  Status fold_packed(SectionBuffer* agg, std::string_view bytes, int64_t iteration);
  // Calls the update hook with the folded `agg` and applies the stop rule:
  // true when the run stops after `iteration`.
  Result<bool> finish(const SectionBuffer& agg, SectionBuffer* state, int64_t iteration);
  // A whole iteration: start, fold each of `partials` in order, finish.
  Result<bool> run(const std::vector<const SectionBuffer*>& partials, SectionBuffer* agg,
                   SectionBuffer* state, int64_t iteration);

  // The stop rule alone: the hook said done, or `iteration` was the last
  // the cap allows.
  bool stops_after(int64_t iteration, bool hook_done) const {
    return hook_done || iteration + 1 >= max_iterations_;
  }
  int64_t max_iterations() const { return max_iterations_; }
  // The size of one partial aggregate, in bytes.
  size_t partial_bytes() const { return partial_.bytes.size(); }

 private:
  IterationStep(SectionBuffer partial, bool custom, IterationHooks* hooks, int64_t max_iterations)
      : partial_(std::move(partial)),
        custom_(custom),
        hooks_(hooks),
        max_iterations_(max_iterations) {}

  SectionBuffer partial_;  // where fold_packed() copies each partial
  bool custom_ = false;    // the program has custom reducers: the aggregate hook folds them
  IterationHooks* hooks_ = nullptr;
  int64_t max_iterations_ = 0;
};

}  // namespace lizard
