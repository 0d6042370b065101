// RunSections: one run's state and aggregate, kept across its attempts (the
// initial state too, for an attempt that starts over), its host hooks (their
// process ends with the run), and the IterationStep that folds into the
// aggregate and calls the hooks.  The driver makes them before the first
// attempt; the loop, the recovery and the outputs' gathering use them.
#pragma once

#include <memory>
#include <optional>

#include "hooks/host_hooks.h"
#include "hooks/iteration_step.h"
#include "program/layout.h"

namespace lizard {

struct RunSections {
  SectionBuffer state, agg, initial_state;
  std::unique_ptr<RunHooks> hooks;
  std::optional<IterationStep> step;  // over `hooks`
};

}  // namespace lizard
