// start_executor_processes: a worker's executors, each in a process of its
// own (ProcessExecutor).  Which executors the backend options select (the
// GPUs of --gpus, or the CPU backend when there is none) is asked of a
// short-lived executor host started with --probe, so that the worker itself
// never opens a GPU; then one host is started per selected GPU (or one for
// the CPU backend), all at once.
//
//   std::string note;
//   auto executors = start_executor_processes(options, &note);
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "exec/executor_factory.h"
#include "exec/process/process_executor.h"

namespace lizard {

// `program`: the binary to start (empty: this process's own).
Result<std::vector<std::unique_ptr<ProcessExecutor>>> start_executor_processes(
    const BackendOptions& options, std::string* note, const std::string& program = "");

// The executor-host arguments that select `options` (without --probe).
std::vector<std::string> executor_host_args(const BackendOptions& options);

}  // namespace lizard
