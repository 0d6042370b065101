// LoopHooks: a program's host hooks as a worker calls them when it drives a
// run's iterations itself (a run placed on this worker alone, see
// MessageType::kLoop): the IterationHooks its IterationStep calls, as the
// server's does.  The daemon opens them once per loop; user code behind them
// runs outside the worker daemon.
//
//   Result<std::unique_ptr<LoopHooks>> h = open(program, params, values, limits);
//   if (!h.ok()) ...;                  // kUnavailable: the server drives the run instead
//   if (!*h) ...;                      // no update hook: done after one iteration
//   Result<bool> done = (*h)->update_state(agg, &state, iteration);
#pragma once

#include <functional>
#include <memory>

#include "common/status.h"
#include "exec/executor.h"
#include "hooks/iteration_hooks.h"
#include "program/run_values.h"
#include "runlog/output_pipe.h"

namespace lizard {

using LoopHooks = IterationHooks;

// What bounds one loop's hook calls: `interrupted` is polled while a call
// runs (a non-OK status ends the call and its process); `call_timeout_ms`
// is the longest a call may take (0: the worker's own --hook-timeout); what
// the hooks print goes to `output`.
struct LoopHookLimits {
  std::function<Status()> interrupted;
  int64_t call_timeout_ms = 0;
  // Where what the hooks print goes (HookProcessOptions::output); unset: the
  // worker's log.
  std::function<void(int64_t iteration, const OutputPipe::Taken& printed)> output{};
};

// Opens a program's update hook for one loop of a run with these params and
// values (which the hooks read in lizard_hook_context): null when the
// program has none; kUnavailable when this worker cannot run it.
using OpenLoopHooks = std::function<Result<std::unique_ptr<LoopHooks>>(
    const ProgramImage& program, const ParamValues& params, const RunValues& values,
    LoopHookLimits limits)>;

}  // namespace lizard
