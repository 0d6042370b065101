// set_close_on_exec: marks a descriptor that a library opened without
// O_CLOEXEC (Asio's sockets) close-on-exec, so that no program the daemon
// starts inherits it.  Helper processes and commands close every descriptor
// they were not given anyway (child_process.h, subprocess.h); this covers
// any other exec, such as the worker starting itself again.
//
//   set_close_on_exec(socket.native_handle());
#pragma once

#include <fcntl.h>

namespace lizard {

inline void set_close_on_exec(int fd) {
  if (fd < 0) return;
  const int flags = ::fcntl(fd, F_GETFD);
  if (flags >= 0 && !(flags & FD_CLOEXEC)) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

}  // namespace lizard
