// WorkerHooks: the host hooks of the programs this worker has built, for the
// loops it drives (client/run_session_loop.cpp).  When a program is built
// here, its host.cpp is compiled and checked in a hook process as the server
// does (hooks/host_hooks.h); a worker that cannot build it (no compiler)
// leaves that program's loops to the server.  Each loop gets a hook process
// of its own from HostHooks::start: one an earlier loop of the program left
// idle, or a new one, so that back-to-back runs do not pay for starting one.
// Thread-safe.
//
//   WorkerHooks hooks(cache_dir, options);
//   hooks.build(program);                                   // at registration
//   auto loop = hooks.open(program, params, values, limits);  // per loop
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "client/loop_hooks.h"
#include "exec/host_compiler.h"
#include "hooks/host_hooks.h"

namespace lizard {

class WorkerHooks {
 public:
  // Each compile of a host.cpp may take `compile_timeout_s` seconds.
  WorkerHooks(const std::string& cache_dir, HookProcessOptions options,
              int compile_timeout_s = HostCompiler::kDefaultCompileTimeoutS);
  ~WorkerHooks();

  // Compiles and checks the program's host.cpp, if it has one.
  void build(const ProgramImage& program);
  // Drops the program's hooks (a deleted program): the processes they kept
  // idle end, and those of loops still running once those loops end.
  void forget(const std::string& hash);
  // The hooks for one loop of a run with these params and values, in a hook
  // process of its own (null without an update hook); kUnavailable when the
  // program's host.cpp did not build here.  `limits` bound its calls: a call
  // that runs past them ends with its process.
  Result<std::unique_ptr<LoopHooks>> open(const ProgramImage& program, const ParamValues& params,
                                          const RunValues& values, LoopHookLimits limits);

 private:
  HostCompiler compiler_;
  HookProcessOptions options_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<HostHooks>> built_;  // GUARDED_BY(mu_)
  std::map<std::string, std::string> failed_;                // GUARDED_BY(mu_): why not
};

}  // namespace lizard
