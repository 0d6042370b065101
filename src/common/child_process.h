// ChildProcess: a helper process that a daemon starts to run user code
// (a program's host hooks, a GPU's kernels) outside itself, so that a fault,
// exit() or endless loop there ends the helper and not the daemon.  The
// helper is the daemon's own binary (/proc/self/exe) started with `args`; it
// finds its end of a FrameChannel on fd 3, and that channel's mailboxes on
// fd 4 (ChildProcess::parent_channel()), and dies with its parent.  Children are started from a
// thread that lives as long as the daemon (PR_SET_PDEATHSIG follows the thread that started a
// child), so any thread may spawn one.  It starts with no signal blocked or ignored.
//
// What user code in a helper can reach is only what the helper was given:
//  - Descriptors: 0, 1 and 2 (the daemon's; or, with ChildOutput::kCaptured,
//    1 and 2 both the write end of one pipe whose read end the daemon takes
//    with take_output_fd(), runlog/output_pipe.h), the channel on fd 3 and
//    its mailboxes on fd 4; every other descriptor of the daemon (its
//    listening socket, its connections, its database) is closed in the
//    child, whether or not it was close-on-exec.
//  - Processes: the helper leads a process group of its own.  A helper that
//    waits for its next request with receive_request() reaps, between
//    requests, the children its user code left behind (also those orphaned
//    by them: it is their subreaper), so that none stays a zombie; user code
//    that waits for a child of its own must do so within the request that
//    started it.  kill(), and the reaping of a helper that ended by itself,
//    kill the whole group: what user code left running ends with its helper.
//
//   auto child = ChildProcess::spawn({"hook-host", so_path});
//   (*child)->channel().send(request);
//   Result<std::string> r = (*child)->channel().receive(5000);
//   if (!r.ok() && !(*child)->running()) log((*child)->exit_description());
//   (*child)->kill();                       // SIGKILL to its group and reap; idempotent
//
//   // In the helper:
//   auto channel = ChildProcess::parent_channel();
//   while (ChildProcess::receive_request(&*channel, &frame).ok()) serve(frame);
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

// Where a helper's stdout and stderr go: the daemon's own, or a pipe the
// daemon reads (what a run's user code prints, kept with the run).
enum class ChildOutput { kInherited, kCaptured };

class ChildProcess {
 public:
  ~ChildProcess();  // kills the child if it still runs
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Starts `program` (default: this process's own binary) with `args`.
  static Result<std::unique_ptr<ChildProcess>> spawn(const std::vector<std::string>& args,
                                                     const std::string& program = "",
                                                     ChildOutput output = ChildOutput::kInherited);

  // In the helper: its end of the channel (fd 3).  Also arranges for the
  // helper to be killed when its parent dies.
  static Result<FrameChannel> parent_channel();
  // In the helper: waits for ever for the next frame on `channel`, reaping
  // meanwhile (at least once a second, and first unless it did so within the
  // last 100 ms) the children its user code left that have exited.  Called
  // from one thread.
  static Status receive_request(FrameChannel* channel, std::string* frame);
  // Reaps every exited child of this process without waiting; how many.
  static int reap_exited_children();

  FrameChannel& channel() { return channel_; }
  // With ChildOutput::kCaptured: the read end of the pipe the helper's stdout
  // and stderr write to, which the caller then owns (close-on-exec); -1
  // otherwise, and after the first call.
  int take_output_fd();
  // As channel().receive_into(), but a helper that ended reads as closed
  // (kUnavailable) within 50 ms, also while a process it started still holds
  // its end of the channel (a fork inherits it).  It does not reap the
  // helper: its pid stays its own until running(), wait_exit() or kill().
  Status receive_into(std::string* frame, int timeout_ms);
  pid_t pid() const { return pid_; }
  // False once the child has exited or been killed (reaps it without
  // waiting, and kills what it left running in its process group).
  bool running();
  // Waits up to `timeout_ms` for the child to exit by itself; true if it did.
  bool wait_exit(int timeout_ms);
  void kill();
  // How the child ended: "exited with status 1", "killed by signal 11
  // (SIGSEGV, a segmentation fault)"; "running" while it runs.
  std::string exit_description();

 private:
  ChildProcess(pid_t pid, FrameChannel channel, int output_fd)
      : pid_(pid), channel_(std::move(channel)), output_fd_(output_fd) {}
  void reap(bool block);
  // Whether the helper has exited, without reaping it.
  bool has_ended() const;

  pid_t pid_ = -1;
  bool reaped_ = false;
  int wait_status_ = 0;
  FrameChannel channel_;
  int output_fd_ = -1;  // until take_output_fd()
};

// "signal 11 (SIGSEGV, a segmentation fault)" and the like.
std::string describe_signal(int sig);

}  // namespace lizard
