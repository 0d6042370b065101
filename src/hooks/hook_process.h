// HookProcess: a program's host hooks, called in a hook process of their own
// (the daemon's binary as `hook-host LIB.so`, see hook_host.h) instead of in
// the daemon.  A segmentation fault, abort(), exit() or endless loop in a
// hook ends that process and fails the call with a message that names the
// hook and how the process ended; the daemon and its other runs go on.  Each
// call is bounded in time, and the caller can end a call early (a cancelled
// run): the process is then killed.  After a failed call the process is gone
// and every later call fails with the same error.
//
//   HookProcessOptions opts;                     // opts.call_timeout_ms, .interrupted
//   auto hp = HookProcess::start(so_path, "host.cpp", opts);   // loads the library there
//   (*hp)->hooks().update;                                     // which hooks it defines
//   LIZARD_RETURN_IF_ERROR((*hp)->setup(manifest, params, values, state, aggregate));
//   Result<bool> done = (*hp)->update_state(aggregate, &state, iteration);
//
// What the hooks print is captured and handed to options.output after each
// call.  One process serves one run (one thread); the process is killed when
// the object goes.  Not thread-safe.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "hooks/hook_protocol.h"
#include "program/layout.h"
#include "program/manifest.h"
#include "runlog/output_pipe.h"

namespace lizard {

class ChildProcess;

struct HookProcessOptions {
  std::string program;          // binary that serves `hook-host`; empty: this one
  int call_timeout_ms = 60000;  // longest a hook (or loading the library) may take
  std::string timeout_setting;  // named in the time-out message, e.g. "--hook-timeout"
  // Polled while a call waits; a non-OK status ends the call (and the
  // process) with that status.  May be empty.
  std::function<Status()> interrupted;
  // setup() only sends the run's setup; the next call awaits its answer
  // (and fails with its error).  For a loop's hooks, set up while the
  // loop's first iteration runs.
  bool setup_in_background = false;
  // What the hooks print (stdout and stderr) goes here after each call, with
  // the iteration of the call (-1: loading, setup and init_global_state);
  // unset: to the daemon's log.
  std::function<void(int64_t iteration, const OutputPipe::Taken& printed)> output;
};

class HookProcess {
 public:
  ~HookProcess();
  HookProcess(const HookProcess&) = delete;
  HookProcess& operator=(const HookProcess&) = delete;

  // Starts a hook process and loads `library` there; `source` (host.cpp)
  // names it in messages.  Fails when loading it ended the process (a static
  // initialiser crashed or exited), took too long, or the library would not load.
  static Result<std::unique_ptr<HookProcess>> start(const std::string& library,
                                                    const std::string& source,
                                                    HookProcessOptions options);

  const HookSet& hooks() const { return hooks_; }

  // Gives the process a run's params, its values (which the hooks read in
  // lizard_hook_context) and the layouts of its sections; once, before the
  // calls.  `state` and `aggregate` are sections of the run.  With
  // options.setup_in_background, fails only when the process is gone.
  Status setup(const Manifest& m, const ParamValues& p, const RunValues& values,
               const SectionBuffer& state, const SectionBuffer& aggregate);

  // init_global_state(params, state).  False when the library lacks it.
  Result<bool> init_state(SectionBuffer* state);
  // aggregate(params, running, partial), at `iteration` (for messages).
  Status aggregate(SectionBuffer* running, const SectionBuffer& partial, int64_t iteration);
  // update_global_state(params, aggregate, state, iteration): true when the
  // hook says the run is done; without the hook, true.
  Result<bool> update_state(const SectionBuffer& aggregate, SectionBuffer* state,
                            int64_t iteration);

  pid_t pid() const;
  // Bounds the calls from now on (a process kept for another run's limits).
  void set_call_timeout_ms(int ms) { options_.call_timeout_ms = ms; }
  // What the calls from now on poll (a process kept for another run).
  void set_interrupted(std::function<Status()> f) { options_.interrupted = std::move(f); }
  // The limits and polling of the calls from now on (a process kept for another run).
  void set_options(HookProcessOptions options) { options_ = std::move(options); }
  // False once a call failed or the process was stopped: it serves no run again.
  bool usable() const { return failed_.ok(); }
  // Ends the process (SIGKILL); later calls fail.
  void kill();

 private:
  HookProcess(std::unique_ptr<ChildProcess> child, std::string source, HookProcessOptions options);

  // What a call is, as its errors name it ("host hook aggregate (iteration
  // 2)"): a fixed text, or a hook's call, whose text is built only for an error.
  struct CallLabel {
    std::string_view text;  // empty: the call of `op` at `iteration`
    HookOp op = HookOp::kInit;
    int64_t iteration = 0;
    std::string str() const;
  };
  // Sends `parts` as one frame and waits for the reply, within the call time
  // limit, into *reply (its capacity reused).
  Status exchange(const CallLabel& what, const std::string_view* parts, size_t count,
                  std::string* reply);
  // Sends `parts` as one frame; `what` names the call should the process be gone.
  Status send(const CallLabel& what, const std::string_view* parts, size_t count);
  // Awaits the answer to a setup sent in the background, if one is due.
  Status finish_setup();
  // Waits for one frame into *reply, polling options_.interrupted; then
  // hands what the call printed to options_.output.
  Status await_reply(const CallLabel& what, std::string* reply);
  Status await_frame(const CallLabel& what, std::string* reply);
  void deliver_output(const CallLabel& what);
  // Marks the process as failed with `st` (killing it) and returns `st`.
  Status fail(Status st);
  // A call of `op` with two sections; the reply's section is copied into `out`.
  Result<int32_t> call(HookOp op, int64_t iteration, const SectionBuffer& first,
                       const SectionBuffer* second, SectionBuffer* out);

  std::unique_ptr<ChildProcess> child_;
  std::unique_ptr<OutputPipe> output_;  // the process's stdout and stderr
  std::string source_;
  HookProcessOptions options_;
  HookSet hooks_;
  bool set_up_ = false;
  bool setup_due_ = false;  // a setup was sent and its answer not yet read
  Status failed_;           // once a call failed: that failure
  // Every call's request head and reply, reused: a call allocates nothing.
  std::string call_head_, reply_;
};

}  // namespace lizard
