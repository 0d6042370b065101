#include "cli_process.h"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace lizard {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> environment(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> out;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    if (kv.rfind("LIZARD_TOKEN=", 0) == 0 || kv.rfind("LIZARD_ADDRESS=", 0) == 0 ||
        kv.rfind("LIZARD_TLS_CA=", 0) == 0)
      continue;
    out.push_back(kv);
  }
  for (const auto& [k, v] : extra) out.push_back(k + "=" + v);
  return out;
}

int counter = 0;

// The lizard command line for `args` against `c`: -a/-p of the cluster
// unless `args` has -a or `env` has LIZARD_ADDRESS.
std::vector<std::string> command_line(const LocalCluster& c, const std::vector<std::string>& args,
                                      const std::map<std::string, std::string>& env) {
  std::vector<std::string> argv = {lizard_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  if (std::find(args.begin(), args.end(), "-a") == args.end() && !env.count("LIZARD_ADDRESS"))
    argv.insert(argv.end(), {"-a", "127.0.0.1", "-p", std::to_string(c.port())});
  return argv;
}

std::vector<char*> c_strings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Appends what the terminal's master side has to `out`; false once the
// slave side is closed everywhere (EIO) or on an error.
bool drain(int master, std::string* out, int wait_ms) {
  pollfd p{master, POLLIN, 0};
  if (poll(&p, 1, wait_ms) <= 0) return true;
  char buf[4096];
  const ssize_t n = read(master, buf, sizeof buf);
  if (n <= 0) return false;
  out->append(buf, static_cast<size_t>(n));
  return true;
}

}  // namespace

CliProcess::CliProcess(const LocalCluster& c, const std::vector<std::string>& args,
                       const std::map<std::string, std::string>& env) {
  const std::string base = c.dir() + "/cli" + std::to_string(++counter);
  out_path_ = base + ".out";
  err_path_ = base + ".err";
  const std::vector<std::string> argv = command_line(c, args, env);
  const std::vector<std::string> envs = environment(env);
  std::vector<char*> a = c_strings(argv), e = c_strings(envs);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addchdir_np(&fa, LIZARD_SOURCE_DIR);
  if (posix_spawn(&pid_, a[0], &fa, nullptr, a.data(), e.data()) != 0) pid_ = -1;
  posix_spawn_file_actions_destroy(&fa);
}

CliProcess::~CliProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

void CliProcess::signal(int sig) const {
  if (pid_ > 0) kill(pid_, sig);
}

CliResult CliProcess::wait(int timeout_s) {
  CliResult r;
  if (pid_ <= 0) {
    r.err = "cannot start " + lizard_binary();
    return r;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  pid_t done = 0;
  while ((done = waitpid(pid_, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (done == pid_) {
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  } else {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_ = -1;
  r.out = slurp(out_path_);
  r.err = slurp(err_path_);
  if (r.exit_code == -1) r.err += "\n[killed after " + std::to_string(timeout_s) + " s]";
  return r;
}

CliResult run_cli(const LocalCluster& c, const std::vector<std::string>& args,
                  const std::map<std::string, std::string>& env, int timeout_s) {
  CliProcess p(c, args, env);
  return p.wait(timeout_s);
}

CliResult run_cli_in_terminal(const LocalCluster& c, const std::vector<std::string>& args,
                              int timeout_s) {
  CliResult r;
  int master = -1, slave = -1;
  winsize size{};
  size.ws_col = 200;
  size.ws_row = 50;
  if (openpty(&master, &slave, nullptr, nullptr, &size) != 0) {
    r.err = "no pseudo-terminal";
    return r;
  }
  const std::vector<std::string> argv = command_line(c, args, {});
  const std::vector<std::string> envs = environment({{"TERM", "xterm"}});
  std::vector<char*> a = c_strings(argv), e = c_strings(envs);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, slave, 1);
  posix_spawn_file_actions_adddup2(&fa, slave, 2);
  posix_spawn_file_actions_addclose(&fa, master);
  posix_spawn_file_actions_addclose(&fa, slave);
  posix_spawn_file_actions_addchdir_np(&fa, LIZARD_SOURCE_DIR);
  pid_t pid = -1;
  if (posix_spawn(&pid, a[0], &fa, nullptr, a.data(), e.data()) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  close(slave);
  if (pid <= 0) {
    close(master);
    r.err = "cannot start " + lizard_binary();
    return r;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  pid_t done = 0;
  while ((done = waitpid(pid, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() < deadline)
    drain(master, &r.out, 10);
  if (done == pid) {
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    for (int i = 0; i < 1000 && drain(master, &r.out, 100); ++i) {
    }
  } else {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    r.out += "\n[killed after " + std::to_string(timeout_s) + " s]";
  }
  close(master);
  return r;
}

}  // namespace lizard
