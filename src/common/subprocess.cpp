#include "common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

extern char** environ;

namespace lizard {
namespace {

using Clock = std::chrono::steady_clock;

// Milliseconds left until `deadline` (-1: no deadline; 0: it has passed).
int millis_left(bool bounded, Clock::time_point deadline) {
  if (!bounded) return -1;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// Reads `fd` into `out` until its end; false when the deadline came first.
bool read_until_end(int fd, bool bounded, Clock::time_point deadline, std::string* out) {
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, millis_left(bounded, deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) return false;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      out->append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      return true;
    }
  }
}

// Waits for `pid` to exit; false when the deadline came first.
bool wait_until_exit(pid_t pid, bool bounded, Clock::time_point deadline, int* status) {
  for (;;) {
    const pid_t r = ::waitpid(pid, status, bounded ? WNOHANG : 0);
    if (r == pid) return true;
    if (r < 0 && errno != EINTR) return true;
    if (r == 0) {
      if (millis_left(bounded, deadline) == 0) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

// The program in a process of its own made with fork(): stdout and stderr
// to `out_fd`, stdin from /dev/null, no other descriptor, a process group of
// its own, `in_child` run last.  The pid, or -errno.
pid_t fork_command(const std::vector<char*>& args, const std::string& cwd, int out_fd,
                   void (*in_child)(const std::string&)) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid < 0 ? -errno : pid;
  ::setpgid(0, 0);
  const int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd < 0 || ::dup2(null_fd, 0) < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(out_fd, 2) < 0)
    ::_exit(127);
  ::close_range(3, ~0U, 0);
  if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(127);
  in_child(cwd);
  ::execvp(args[0], args.data());
  ::_exit(127);
}

}  // namespace

Result<CommandOutput> run_command(const std::vector<std::string>& argv, const std::string& cwd,
                                  int timeout_ms, void (*in_child)(const std::string& cwd)) {
  if (argv.empty()) return invalid_argument("empty command");
  const bool bounded = timeout_ms > 0;
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return internal_error(std::string("pipe: ") + strerror(errno));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = 0;
  if (in_child) {
    pid = fork_command(args, cwd, pipefd[1], in_child);
    rc = pid < 0 ? -pid : 0;
    if (pid > 0) ::setpgid(pid, pid);  // as the child does: a kill at once finds its group
  } else {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    // The program gets stdin, stdout and stderr, and none of our other
    // descriptors, whether or not they are close-on-exec.
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
    // A group of its own, so that what it starts can be killed with it.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    rc = posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
  }
  close(pipefd[1]);
  if (rc != 0) {
    close(pipefd[0]);
    return not_found("cannot run " + argv[0] + ": " + strerror(rc));
  }
  CommandOutput out;
  int status = 0;
  const bool ended = read_until_end(pipefd[0], bounded, deadline, &out.output) &&
                     wait_until_exit(pid, bounded, deadline, &status);
  close(pipefd[0]);
  if (!ended) {
    ::kill(-pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    out.timed_out = true;
  }
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

}  // namespace lizard
