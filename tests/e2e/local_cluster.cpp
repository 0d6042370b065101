#include "local_cluster.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fstream>
#include <sstream>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "common/subprocess.h"

extern char** environ;

namespace lizard {
namespace {

std::string daemon_binary(const char* built_here, const char* name) {
  const char* dir = std::getenv("LIZARD_E2E_DAEMONS");
  if (dir == nullptr || *dir == '\0') return built_here;
  return std::string(dir) + "/" + name;
}

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

void kill_and_reap(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGTERM);
  for (int i = 0; i < 50; ++i) {
    if (waitpid(pid, nullptr, WNOHANG) == pid) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

}  // namespace

int connect_loopback(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

std::string raw_exchange(uint16_t port, const std::string& request) {
  const int fd = connect_loopback(port);
  if (fd < 0) return "";
  (void)!write(fd, request.data(), request.size());
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

std::string lizard_binary() {
  return daemon_binary(LIZARD_BIN, "lizard");
}
std::string load_program_binary() {
  return daemon_binary(LOAD_PROGRAM_BIN, "load_program");
}

std::string printed_checksum(const CommandResult& r) {
  if (r.exit_code != 0) return "";
  const size_t end = r.output.find_last_not_of("\n");
  if (end == std::string::npos || end < 63) return "";
  return r.output.substr(end - 63, 64);
}

LocalCluster::LocalCluster() {
  char tmpl[] = "/tmp/lizard-e2e-XXXXXX";
  dir_ = mkdtemp(tmpl);
  port_ = free_port();
}

LocalCluster::~LocalCluster() {
  stop();
  std::error_code ec;
  if (!std::getenv("LIZARD_KEEP_TEST_DIRS")) std::filesystem::remove_all(dir_, ec);
}

pid_t LocalCluster::spawn(const std::vector<std::string>& argv, const std::string& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

Status LocalCluster::start(int workers, const std::vector<std::string>& worker_args,
                           const std::vector<std::string>& server_args) {
  std::vector<std::string> argv = {
      lizard_binary(), "server", "-v", "--host", "127.0.0.1", "--port", std::to_string(port_)};
  auto given = [&](const std::string& flag) {
    return std::find(server_args.begin(), server_args.end(), flag) != server_args.end();
  };
  if (!given("--state-dir")) argv.insert(argv.end(), {"--state-dir", dir_ + "/server"});
  if (!given("--worker-wait")) argv.insert(argv.end(), {"--worker-wait", "20"});
  if (tls()) argv.insert(argv.end(), {"--tls-cert", tls_.cert, "--tls-key", tls_.key});
  argv.insert(argv.end(), server_args.begin(), server_args.end());
  server_argv_ = argv;
  LIZARD_RETURN_IF_ERROR(start_server());
  for (int i = 0; i < workers; ++i) LIZARD_RETURN_IF_ERROR(add_worker(worker_args));
  return wait_for_workers(static_cast<size_t>(workers));
}

Status LocalCluster::start_server() {
  server_ = spawn(server_argv_, dir_ + "/server.log");
  if (server_ < 0) return internal_error("cannot start the server");
  for (int i = 0; i < 200; ++i) {
    auto r = get("/ruok");
    if (r.ok() && r->body == "imok") return Status::Ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return unavailable("the server did not answer within 10 s (log in " + dir_ + "/server.log)");
}

int LocalCluster::stop_server(int timeout_s) {
  const pid_t pid = server_;
  server_ = -1;
  if (pid <= 0) return -1;
  kill(pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Status LocalCluster::restart_server() {
  if (server_ > 0) {
    kill(server_, SIGKILL);
    waitpid(server_, nullptr, 0);
  }
  return start_server();
}

size_t executor_count(const LocalCluster& c) {
  size_t n = 0;
  for (const auto& w : get_json(c, "/clients")) n += w["hardware"]["executors"].size();
  return n;
}

bool wait_for_iterations(const LocalCluster& c, const std::string& id, int64_t n, int timeout_s) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < until) {
    const nlohmann::json r = get_json(c, "/runtimes/" + id);
    if (r.value("iterations", int64_t{0}) >= n) return true;
    const std::string status = r.value("status", "");
    if (status != "running" && status != "queued") return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::set<std::string> plan_workers(const nlohmann::json& record) {
  std::set<std::string> out;
  if (record.contains("plan") && record["plan"].contains("executors"))
    for (const auto& e : record["plan"]["executors"]) out.insert(e.value("worker", ""));
  return out;
}

Status LocalCluster::add_worker(const std::vector<std::string>& extra) {
  const std::string n = std::to_string(workers_.size());
  std::vector<std::string> argv = {lizard_binary(),      "client", "-v", "-a", "127.0.0.1", "-p",
                                   std::to_string(port_)};
  auto given = [&](const std::string& flag) {
    return std::find(extra.begin(), extra.end(), flag) != extra.end();
  };
  if (!given("--cache-dir")) argv.insert(argv.end(), {"--cache-dir", dir_ + "/cache" + n});
  if (!given("--backend")) {
    const char* b = std::getenv("LIZARD_E2E_BACKEND");  // "cuda" on GPU machines
    std::string backend = b && *b ? b : "cpu";
    // A test that asks for several executors on one worker gets them on any
    // machine: the CUDA backend would give it one per GPU, and a node may
    // have one.
    const auto asked = std::find(extra.begin(), extra.end(), "--cpu-executors");
    if (asked != extra.end() && asked + 1 != extra.end() && std::atoi((asked + 1)->c_str()) > 1)
      backend = "cpu";
    argv.insert(argv.end(), {"--backend", backend});
  }
  if (!given("--cpu-threads")) argv.insert(argv.end(), {"--cpu-threads", "2"});
  // LIZARD_E2E_CPU_EXECUTORS=N: CPU workers of N executors each, so that the
  // suite meets the multi-executor workers of multi-GPU nodes on any machine.
  const char* cpu_executors = std::getenv("LIZARD_E2E_CPU_EXECUTORS");
  if (cpu_executors && *cpu_executors && !given("--cpu-executors") && !given("--gpus"))
    argv.insert(argv.end(), {"--cpu-executors", cpu_executors});
  if (tls() && !given("--tls-ca")) argv.insert(argv.end(), {"--tls-ca", tls_.ca});
  argv.insert(argv.end(), extra.begin(), extra.end());
  pid_t pid = spawn(argv, dir_ + "/worker" + n + ".log");
  if (pid < 0) return internal_error("cannot start a worker");
  workers_.push_back(pid);
  return Status::Ok();
}

Status LocalCluster::wait_for_workers(size_t n, int timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = get("/clients");
    if (r.ok() && r->status == 200) {
      auto j = nlohmann::json::parse(r->body, nullptr, false);
      if (j.is_array() && j.size() >= n) return Status::Ok();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return unavailable("workers did not join within " + std::to_string(timeout_s) + " s (logs in " +
                     dir_ + ")");
}

void LocalCluster::stop() {
  for (pid_t p : workers_)
    if (p > 0) kill_and_reap(p);
  workers_.clear();
  kill_and_reap(server_);
  server_ = -1;
}

void LocalCluster::kill_worker(size_t i, int sig) {
  if (i >= workers_.size() || workers_[i] <= 0) return;
  kill(workers_[i], sig);
  waitpid(workers_[i], nullptr, 0);
  workers_[i] = -1;
}

bool LocalCluster::server_alive() const {
  return server_ > 0 && waitpid(server_, nullptr, WNOHANG) == 0 && get("/ruok").ok();
}

CommandResult LocalCluster::load_program(const std::string& dir) const {
  std::vector<std::string> argv = {load_program_binary(), dir, uri(), "--timeout", "120"};
  if (!token_.empty()) argv.insert(argv.end(), {"--token", token_});
  if (tls()) argv.insert(argv.end(), {"--tls-ca", tls_.ca});
  auto r = run_command(argv);
  if (!r.ok()) return {-1, r.status().message()};
  return {r->exit_code, r->output};
}

Result<HttpReply> LocalCluster::get(const std::string& path) const {
  return http_request("GET", uri() + path, "", "", 30, token_, {tls(), tls_.ca});
}

Result<HttpReply> LocalCluster::post(const std::string& path, const std::string& body) const {
  return http_request("POST", uri() + path, body, "application/json", 240, token_,
                      {tls(), tls_.ca});
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<pid_t> children_of(pid_t daemon, const std::string& command) {
  std::vector<pid_t> out;
  const std::string tasks = "/proc/" + std::to_string(daemon) + "/task";
  std::error_code ec;
  for (const auto& t : std::filesystem::directory_iterator(tasks, ec)) {
    std::istringstream children(read_file(t.path().string() + "/children"));
    for (pid_t child; children >> child;) {
      if (!command.empty() &&
          read_file("/proc/" + std::to_string(child) + "/cmdline").find(command) ==
              std::string::npos)
        continue;
      out.push_back(child);
    }
  }
  return out;
}

std::string register_program(const LocalCluster& c, const std::string& dir) {
  CommandResult r = c.load_program(dir);
  if (r.exit_code != 0)
    std::fprintf(stderr, "load_program %s failed:\n%s\n", dir.c_str(), r.output.c_str());
  return r.exit_code == 0 ? printed_checksum(r) : "";
}

nlohmann::json get_json(const LocalCluster& c, const std::string& path) {
  auto r = c.get(path);
  return r.ok() ? nlohmann::json::parse(r->body, nullptr, false) : nlohmann::json();
}

std::string submit_run(const LocalCluster& c, const std::string& hash, const nlohmann::json& body) {
  auto r = c.post("/runtime/" + hash, body.dump());
  if (!r.ok() || r->status != 202) {
    std::fprintf(stderr, "POST /runtime/%s: %s\n", hash.c_str(),
                 r.ok() ? r->body.c_str() : r.status().message().c_str());
    return "";
  }
  return nlohmann::json::parse(r->body, nullptr, false).value("runtime_id", "");
}

nlohmann::json wait_until_finished(const LocalCluster& c, const std::string& id, int timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  nlohmann::json rec;
  while (std::chrono::steady_clock::now() < deadline) {
    rec = get_json(c, "/runtimes/" + id);
    std::string st = rec.value("status", "");
    if (st == "done" || st == "failed" || st == "cancelled") return rec;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return rec;
}

}  // namespace lizard
