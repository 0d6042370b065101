// HostHooks: a program's host.cpp, compiled with the system compiler against
// the generated lizard_program.h when the program is registered, and checked
// in a hook process (hooks/hook_process.h): the server never loads it
// itself.  The check runs its static initialisers and finds which of the
// three optional C hooks it defines.  Shared by the program's runs;
// thread-safe.
//
// Each run of a program with hooks gets a hook process to itself from
// start(): RunHooks makes the calls there, and a hook that crashes, exits
// or hangs fails that run with a message naming the hook and how its process
// ended.  A process whose run ended without such a failure is kept idle for
// the program's next run (its library's globals stay as the hooks left
// them), within the daemon's bounds (hooks/idle_hook_processes.h), and ends
// with the program; one whose call failed is never reused.  A program
// without host.cpp gets RunHooks with no process.
//
//   Result<std::shared_ptr<HostHooks>> h = HostHooks::build(image, compiler, opts);
//   Result<std::unique_ptr<RunHooks>> run = (*h)->start(m, params, values, state, agg, opts);
//   Result<bool> set = (*run)->init_state(&state);         // false when the hook is absent
//   Result<bool> done = (*run)->update_state(agg, &state, iteration);
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "exec/executor.h"
#include "exec/host_compiler.h"
#include "hooks/hook_process.h"
#include "hooks/iteration_hooks.h"

namespace lizard {

class HostHooks;

// One run's hooks: its hook process, which goes back to its program's idle
// processes when this object goes, unless a call failed (then it is killed).
// The iteration's hooks (IterationHooks) are what an IterationStep calls.
class RunHooks : public IterationHooks {
 public:
  explicit RunHooks(std::unique_ptr<HookProcess> process = nullptr,
                    std::weak_ptr<const HostHooks> home = {})
      : process_(std::move(process)), home_(std::move(home)) {}
  ~RunHooks() override;
  RunHooks(const RunHooks&) = delete;
  RunHooks& operator=(const RunHooks&) = delete;

  // Each call's status is the hook's: an error fails the run.
  // False when the hook is absent.
  Result<bool> init_state(SectionBuffer* state);
  // A no-op when the hook is absent.
  Status aggregate(SectionBuffer* running, const SectionBuffer& partial,
                   int64_t iteration) override;
  // True when the run is done; without the hook, after one iteration.
  Result<bool> update_state(const SectionBuffer& aggregate, SectionBuffer* state,
                            int64_t iteration) override;

  // The hook process (null for a program without host.cpp).
  HookProcess* process() const { return process_.get(); }

 private:
  std::unique_ptr<HookProcess> process_;
  std::weak_ptr<const HostHooks> home_;
};

class HostHooks : public std::enable_shared_from_this<HostHooks> {
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

  // One run's hook process (none without host.cpp), given the run's params,
  // values (the hooks' lizard_hook_context), section layouts and `options`:
  // one an earlier run of the program left idle (the one build() checked the
  // library in, at first), or a new one.  Back-to-back runs thus never wait
  // for a process to start.
  Result<std::unique_ptr<RunHooks>> start(const Manifest& m, const ParamValues& p,
                                          const RunValues& values, const SectionBuffer& state,
                                          const SectionBuffer& aggregate,
                                          HookProcessOptions options) const;
  // Hook processes kept idle for the next runs (for tests and metrics).
  size_t idle_processes() const;
  // Ends the processes kept idle.
  ~HostHooks();

 private:
  friend class RunHooks;
  // A process of a run that ended without a failed call, for the next run.
  void keep_idle(std::unique_ptr<HookProcess> process) const;
  std::unique_ptr<HookProcess> take_idle() const;

  std::string library_;  // the compiled host.cpp; empty without one
  std::string source_;   // "host.cpp"
  HookSet hooks_;
};

}  // namespace lizard
