// IterationHooks: the two host hooks an iteration calls once its partial
// aggregates are in — `aggregate`, which folds the fields of custom
// reducers, and `update_global_state`, which turns the folded aggregate into
// the next state and says whether the run is done.  A run's hook process
// (hooks/host_hooks.h) implements them on the server and on a worker that
// drives a loop; tests give fakes.  IterationStep (hooks/iteration_step.h)
// is what calls them.
//
//   class Fake : public IterationHooks { ... };
//   Status st = hooks.aggregate(&running, partial, iteration);
//   Result<bool> done = hooks.update_state(aggregate, &state, iteration);
#pragma once

#include <cstdint>

#include "common/status.h"
#include "program/layout.h"

namespace lizard {

class IterationHooks {
 public:
  virtual ~IterationHooks() = default;
  // Folds `partial`'s custom-reducer fields into `running`.  An error (the
  // hook crashed, or ran past its time) fails the run.
  virtual Status aggregate(SectionBuffer* running, const SectionBuffer& partial,
                           int64_t iteration) = 0;
  // Updates `state` from the iteration's folded `aggregate`; true when the
  // run is done.  An error fails the run.
  virtual Result<bool> update_state(const SectionBuffer& aggregate, SectionBuffer* state,
                                    int64_t iteration) = 0;
};

}  // namespace lizard
