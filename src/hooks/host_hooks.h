// HostHooks: a program's host.cpp, compiled with the system compiler against
// the generated lizard_program.h when the program is registered, and checked
// in a hook process (hooks/hook_process.h): the server never loads it
// itself.  The check runs its static initialisers and finds which of the
// three optional C hooks it defines.  Immutable once built; shared by the
// program's runs.
//
// Each run of a program with hooks gets a hook process of its own from
// start(): RunHooks makes the calls there, and a hook that crashes, exits
// or hangs fails that run with a message naming the hook and how its process
// ended.  A program without host.cpp gets RunHooks with no process.
//
//   Result<std::shared_ptr<HostHooks>> h = HostHooks::build(image, compiler, opts);
//   Result<std::unique_ptr<RunHooks>> run = (*h)->start(m, params, state, agg, opts);
//   Result<bool> set = (*run)->init_state(&state);         // false when the hook is absent
//   Result<bool> done = (*run)->update_state(agg, &state, iteration);
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "exec/executor.h"
#include "exec/host_compiler.h"
#include "hooks/hook_process.h"

namespace lizard {

// One run's hooks: its hook process, killed when this object goes.
class RunHooks {
 public:
  explicit RunHooks(std::unique_ptr<HookProcess> process = nullptr)
      : process_(std::move(process)) {}

  // Each call's status is the hook's: an error fails the run.
  // False when the hook is absent.
  Result<bool> init_state(SectionBuffer* state);
  // A no-op when the hook is absent.
  Status aggregate(SectionBuffer* running, const SectionBuffer& partial, int64_t iteration);
  // True when the run is done; without the hook, after one iteration.
  Result<bool> update_state(const SectionBuffer& aggregate, SectionBuffer* state,
                            int64_t iteration);

  // The hook process (null for a program without host.cpp).
  HookProcess* process() const { return process_.get(); }

 private:
  std::unique_ptr<HookProcess> process_;
};

class HostHooks {
 public:
  // Compiles host.cpp and checks it in a hook process (bounded by
  // options.call_timeout_ms).  With no host source in the manifest, returns
  // hooks that are all absent.  A host.cpp whose loading crashes or exits is
  // a kCompileError naming what happened.
  static Result<std::shared_ptr<HostHooks>> build(const ProgramImage& image,
                                                  const HostCompiler& compiler,
                                                  const HookProcessOptions& options = {});

  bool has_init() const { return hooks_.init; }
  bool has_update() const { return hooks_.update; }
  bool has_aggregate() const { return hooks_.aggregate; }
  bool any() const { return hooks_.any(); }

  // Starts one run's hook process (none without host.cpp) and gives it the
  // run's params and section layouts.
  Result<std::unique_ptr<RunHooks>> start(const Manifest& m, const ParamValues& p,
                                          const SectionBuffer& state,
                                          const SectionBuffer& aggregate,
                                          HookProcessOptions options) const;

 private:
  std::string library_;  // the compiled host.cpp; empty without one
  std::string source_;   // "host.cpp"
  HookSet hooks_;
};

}  // namespace lizard
