#include "cli_process.h"

#include <fcntl.h>
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

}  // namespace

CliProcess::CliProcess(const LocalCluster& c, const std::vector<std::string>& args,
                       const std::map<std::string, std::string>& env) {
  const std::string base = c.dir() + "/cli" + std::to_string(++counter);
  out_path_ = base + ".out";
  err_path_ = base + ".err";
  std::vector<std::string> argv = {LIZARD_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  if (std::find(args.begin(), args.end(), "-a") == args.end())
    argv.insert(argv.end(), {"-a", "127.0.0.1", "-p", std::to_string(c.port())});
  const std::vector<std::string> envs = environment(env);
  std::vector<char*> a, e;
  for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  for (const auto& s : envs) e.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  e.push_back(nullptr);
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
    r.err = "cannot start " LIZARD_BIN;
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

}  // namespace lizard
