#include "netns_hosts.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <sstream>

#include "common/subprocess.h"

extern char** environ;

namespace lizard {
namespace {

// Every name starts with this and the pid of the test process that made it.
constexpr const char* kPrefix = "lznt";

std::string netns_path(const std::string& name) {
  return "/run/netns/" + name;
}

bool pid_alive(pid_t pid) {
  return kill(pid, 0) == 0 || errno == EPERM;
}

Result<std::string> ip_output(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = run_command(argv);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return internal_error("ip " + args.front() + " ...: " + r->output);
  return r->output;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

// Kills the processes still in namespace `name`, then removes it.
void remove_netns(const std::string& name) {
  if (auto pids = ip_output({"netns", "pids", name}); pids.ok())
    for (const auto& p : split_lines(*pids)) {
      const pid_t pid = static_cast<pid_t>(std::stol(p));
      if (pid > 1) kill(pid, SIGKILL);
    }
  (void)ip_output({"netns", "del", name});
}

}  // namespace

std::string netns_unavailable_reason() {
  if (geteuid() != 0)
    return "network namespaces need root (this test runs as uid " + std::to_string(geteuid()) + ")";
  auto r = run_command({"ip", "-V"});
  if (!r.ok() || r->exit_code != 0) return "the `ip` command (iproute2) is not installed";
  return "";
}

void remove_stale_netns() {
  auto list = ip_output({"netns", "list"});
  if (!list.ok()) return;
  for (const auto& line : split_lines(*list)) {
    const std::string name = line.substr(0, line.find(' '));
    if (name.rfind(kPrefix, 0) != 0) continue;
    const size_t dash = name.find('-');
    const std::string digits = name.substr(4, dash == std::string::npos ? 0 : dash - 4);
    if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit)) continue;
    if (!pid_alive(static_cast<pid_t>(std::stol(digits)))) remove_netns(name);
  }
}

NetnsHosts::NetnsHosts(int n) {
  static std::atomic<int> made{0};
  prefix_ = std::string(kPrefix) + std::to_string(getpid()) + "-" + std::to_string(made++) + "-";
  if (std::string why = netns_unavailable_reason(); !why.empty()) {
    status_ = unavailable(why);
    return;
  }
  remove_stale_netns();
  status_ = make(n);
  if (!status_.ok()) remove_all();
}

NetnsHosts::~NetnsHosts() {
  remove_all();
}

Status NetnsHosts::ip(const std::vector<std::string>& args) const {
  auto r = ip_output(args);
  return r.ok() ? Status::Ok() : r.status();
}

Status NetnsHosts::make(int n) {
  switch_ = prefix_ + "sw";
  LIZARD_RETURN_IF_ERROR(ip({"netns", "add", switch_}));
  LIZARD_RETURN_IF_ERROR(ip({"-n", switch_, "link", "add", "br0", "type", "bridge"}));
  LIZARD_RETURN_IF_ERROR(ip({"-n", switch_, "link", "set", "br0", "up"}));
  for (int i = 0; i < n; ++i) {
    const std::string host = prefix_ + "h" + std::to_string(i);
    const std::string port = "p" + std::to_string(i);
    LIZARD_RETURN_IF_ERROR(ip({"netns", "add", host}));
    hosts_.push_back(host);
    LIZARD_RETURN_IF_ERROR(ip({"-n", host, "link", "add", "eth0", "type", "veth", "peer", "name",
                               port, "netns", switch_}));
    LIZARD_RETURN_IF_ERROR(ip({"-n", switch_, "link", "set", port, "master", "br0", "up"}));
    LIZARD_RETURN_IF_ERROR(ip({"-n", host, "addr", "add", address(i) + "/24", "dev", "eth0"}));
    LIZARD_RETURN_IF_ERROR(ip({"-n", host, "link", "set", "eth0", "up"}));
    LIZARD_RETURN_IF_ERROR(ip({"-n", host, "link", "set", "lo", "up"}));
  }
  return Status::Ok();
}

void NetnsHosts::remove_all() {
  const std::vector<pid_t> started = pids_;
  for (pid_t p : started) kill_now(p);
  for (const auto& h : hosts_) remove_netns(h);
  hosts_.clear();
  if (!switch_.empty()) remove_netns(switch_);
  switch_.clear();
}

Status NetnsHosts::cut(int i) {
  return ip({"-n", switch_, "link", "set", "p" + std::to_string(i), "down"});
}

Status NetnsHosts::restore(int i) {
  return ip({"-n", switch_, "link", "set", "p" + std::to_string(i), "up"});
}

Status NetnsHosts::shape(int i, const std::string& rate) {
  // The bucket holds 1 MiB: more than the largest (GSO) packet, little
  // against the megabytes a test sends.
  const std::vector<std::string> tbf = {"root",  "tbf", "rate",    rate,
                                        "burst", "1mb", "latency", "100ms"};
  for (const auto& [ns, dev] :
       {std::pair{name(i), std::string("eth0")}, std::pair{switch_, "p" + std::to_string(i)}}) {
    std::vector<std::string> argv = {"tc", "-n", ns, "qdisc", "replace", "dev", dev};
    argv.insert(argv.end(), tbf.begin(), tbf.end());
    auto r = run_command(argv);
    if (!r.ok()) return r.status();
    if (r->exit_code != 0) return internal_error("tc qdisc replace: " + r->output);
  }
  return Status::Ok();
}

bool NetnsHosts::enter(int i) const {
  const int fd = open(netns_path(name(i)).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = setns(fd, CLONE_NEWNET) == 0;
  close(fd);
  return ok;
}

pid_t NetnsHosts::spawn(int i, const std::vector<std::string>& argv, const std::string& log,
                        const SpawnOptions& options) {
  // Everything the child needs is made before fork(): after it, only system calls.
  const std::string ns = netns_path(name(i));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid != 0) {
    if (pid > 0) pids_.push_back(pid);
    return pid;
  }
  const int nsfd = open(ns.c_str(), O_RDONLY);
  if (nsfd < 0 || setns(nsfd, CLONE_NEWNET) != 0) _exit(126);
  if (!options.hide_dir.empty()) {
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) ||
        mount("tmpfs", options.hide_dir.c_str(), "tmpfs", 0, "size=1m") != 0)
      _exit(126);
  }
  const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  const int in = open("/dev/null", O_RDONLY);
  if (out < 0 || in < 0) _exit(126);
  dup2(in, 0);
  dup2(out, 1);
  dup2(out, 2);
  close_range(3, ~0U, 0);
  execve(args[0], args.data(), environ);
  _exit(127);
}

void NetnsHosts::kill_now(pid_t pid) {
  auto it = std::find(pids_.begin(), pids_.end(), pid);
  if (pid <= 0 || it == pids_.end()) return;
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  pids_.erase(it);
}

void NetnsHosts::stop(pid_t pid) {
  if (pid <= 0 || std::find(pids_.begin(), pids_.end(), pid) == pids_.end()) return;
  kill(pid, SIGTERM);
  for (int i = 0; i < 50; ++i) {
    if (waitpid(pid, nullptr, WNOHANG) == pid) {
      pids_.erase(std::find(pids_.begin(), pids_.end(), pid));
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill_now(pid);
}

int NetnsHosts::wait(pid_t pid, int timeout_s) {
  auto it = std::find(pids_.begin(), pids_.end(), pid);
  if (pid <= 0 || it == pids_.end()) return -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      pids_.erase(it);
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill_now(pid);
  return -1;
}

}  // namespace lizard
