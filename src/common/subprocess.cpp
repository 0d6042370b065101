#include "common/subprocess.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace lizard {

Result<CommandOutput> run_command(const std::vector<std::string>& argv, const std::string& cwd) {
  if (argv.empty()) return invalid_argument("empty command");
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return internal_error(std::string("pipe: ") + strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  // The program gets stdin, stdout and stderr, and none of our other
  // descriptors, whether or not they are close-on-exec.
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(pipefd[1]);
  if (rc != 0) {
    close(pipefd[0]);
    return not_found("cannot run " + argv[0] + ": " + strerror(rc));
  }
  CommandOutput out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(pipefd[0], buf, sizeof buf);
    if (n > 0) {
      out.output.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(pipefd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

}  // namespace lizard
