// The executor host: `lizard executor-host`, a process that a worker starts
// for each of its executors (one per GPU, or the CPU backend) so that a
// kernel that crashes, calls exit() or never ends takes down that process
// and not the worker.  It creates the real executor (CudaExecutor or
// CpuExecutor, through make_executors with the options it was started with,
// which select one device) and serves the executor protocol
// (executor_protocol.h) on the channel its parent left on fd 3, one call at
// a time, until the channel closes.  ProcessExecutor is the other end.
//
//   lizard executor-host --backend cuda --gpus 1 --cache-dir DIR     one GPU
//   lizard executor-host --backend cpu --cpu-threads 8                the CPU backend
//   lizard executor-host --probe --backend auto --gpus auto:2         says which executors
//                                                                     the options select, then
//                                                                     exits
#pragma once

#include "exec/executor_factory.h"

namespace lizard {

// Serves until the parent closes the channel (returns 0), or the device
// is lost (returns 3, after answering the call that lost it).  With
// `probe`, answers one kProbe request and returns.
int run_executor_host(const BackendOptions& options, bool probe);

}  // namespace lizard
