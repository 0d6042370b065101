// ChildProcess: a helper process that a daemon starts to run user code
// (a program's host hooks, a GPU's kernels) outside itself, so that a fault,
// exit() or endless loop there ends the helper and not the daemon.  The
// helper is the daemon's own binary (/proc/self/exe) started with `args`; it
// finds its end of a FrameChannel on fd 3, and that channel's mailboxes on
// fd 4 (ChildProcess::parent_channel()), and dies with its parent.  Children are started from a
// thread that lives as long as the daemon (PR_SET_PDEATHSIG follows the thread that started a
// child), so any thread may spawn one.  It starts with no signal blocked or ignored.
//
//   auto child = ChildProcess::spawn({"hook-host", so_path});
//   (*child)->channel().send(request);
//   Result<std::string> r = (*child)->channel().receive(5000);
//   if (!r.ok() && !(*child)->running()) log((*child)->exit_description());
//   (*child)->kill();                       // SIGKILL and reap; idempotent
//
// Not thread-safe; the owner serialises calls.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "common/frame_channel.h"
#include "common/status.h"

namespace lizard {

class ChildProcess {
 public:
  ~ChildProcess();  // kills the child if it still runs
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Starts `program` (default: this process's own binary) with `args`.
  static Result<std::unique_ptr<ChildProcess>> spawn(const std::vector<std::string>& args,
                                                     const std::string& program = "");

  // In the helper: its end of the channel (fd 3).  Also arranges for the
  // helper to be killed when its parent dies.
  static Result<FrameChannel> parent_channel();

  FrameChannel& channel() { return channel_; }
  pid_t pid() const { return pid_; }
  // False once the child has exited or been killed (reaps it without waiting).
  bool running();
  // Waits up to `timeout_ms` for the child to exit by itself; true if it did.
  bool wait_exit(int timeout_ms);
  void kill();
  // How the child ended: "exited with status 1", "killed by signal 11
  // (SIGSEGV, a segmentation fault)"; "running" while it runs.
  std::string exit_description();

 private:
  ChildProcess(pid_t pid, FrameChannel channel) : pid_(pid), channel_(std::move(channel)) {}
  void reap(bool block);

  pid_t pid_ = -1;
  bool reaped_ = false;
  int wait_status_ = 0;
  FrameChannel channel_;
};

// "signal 11 (SIGSEGV, a segmentation fault)" and the like.
std::string describe_signal(int sig);

}  // namespace lizard
