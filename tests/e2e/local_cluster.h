// LocalCluster: a real `lizard server` and N `lizard client` processes on
// 127.0.0.1, for end-to-end tests and benchmarks.  Every process is killed
// when the cluster is destroyed.
//
//   LocalCluster c;
//   ASSERT_TRUE(c.start(2).ok());
//   auto out = c.load_program(LIZARD_SOURCE_DIR "/examples/sum");   // {exit code, output}
//   auto run = c.post_json("/runtime/" + hash + "?wait=1", body);
//
//   c.use_tls({cert, key, ca});   // before start(): https:// and wss:// throughout
#pragma once

#include <sys/types.h>
#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "net/http_client.h"

namespace lizard {

struct CommandResult {
  int exit_code = -1;
  std::string output;
};

// The checksum load_program printed (its last line); empty when it failed.
std::string printed_checksum(const CommandResult& r);

class LocalCluster;

// The server's certificate and key and the CA that its clients trust (PEM files).
struct ClusterTls {
  std::string cert, key, ca;
};

// The daemons' binaries that the tests start: this build's `lizard` and
// `load_program`, or those of the build directory named by
// $LIZARD_E2E_DAEMONS, so that one build's tests drive another build's
// daemons (scripts/test-sanitizers: the sanitized ones).
std::string lizard_binary();
std::string load_program_binary();

// A TCP connection to 127.0.0.1:`port` whose reads give up after 10 s; -1
// when it cannot connect.  For tests that speak HTTP byte by byte.
int connect_loopback(uint16_t port);
// Sends `request` as is on a new connection and returns everything the
// server sends back before it closes it (or 10 s pass); "" when it cannot
// connect.
std::string raw_exchange(uint16_t port, const std::string& request);

// The whole of a file (a daemon's log, an output), "" when it cannot be read.
std::string read_file(const std::string& path);
// The processes `daemon` started (every thread's children), or those of them
// whose command line holds `command` ("executor-host", "hook-host").
std::vector<pid_t> children_of(pid_t daemon, const std::string& command = "");
// Registers a program directory with load_program; its checksum ("" on failure).
std::string register_program(const LocalCluster& c, const std::string& dir);
// GET `path` parsed as JSON (null when the request failed).
nlohmann::json get_json(const LocalCluster& c, const std::string& path);
// POST `body` to /runtime/<hash>; the run id (empty when refused).
std::string submit_run(const LocalCluster& c, const std::string& hash, const nlohmann::json& body);
// Polls GET /runtimes/<id> until the run is done, failed or cancelled (or the time is up).
nlohmann::json wait_until_finished(const LocalCluster& c, const std::string& id, int timeout_s);
// Polls until run `id` has made `n` iterations; false when it ended first or
// the time ran out.
bool wait_for_iterations(const LocalCluster& c, const std::string& id, int64_t n, int timeout_s);

// The executors of every worker that has joined (GET /clients): a test
// expects what the machine it runs on gives, whatever its GPUs.
size_t executor_count(const LocalCluster& c);
// The distinct workers a run record's plan spread its rows over.
std::set<std::string> plan_workers(const nlohmann::json& record);

class LocalCluster {
 public:
  LocalCluster();
  ~LocalCluster();

  // Starts the server and `workers` CPU workers; waits until all have joined.
  Status start(int workers, const std::vector<std::string>& worker_args = {},
               const std::vector<std::string>& server_args = {});
  // The bearer token that get(), post() and load_program() present.
  void set_token(std::string token) { token_ = std::move(token); }
  // Before start(): the server serves TLS with `tls.cert`/`tls.key`, and
  // workers, load_program, get() and post() trust `tls.ca`.
  void use_tls(ClusterTls tls) { tls_ = std::move(tls); }
  bool tls() const { return !tls_.cert.empty(); }
  Status add_worker(const std::vector<std::string>& extra_args = {});
  Status wait_for_workers(size_t n, int timeout_s = 30);
  void stop();
  // Sends the server SIGTERM and waits up to `timeout_s` for it to exit: its
  // exit status, or -1 when it had to be killed or was not running.
  int stop_server(int timeout_s);
  // Kills the server with SIGKILL and starts it again on the same port and
  // state directory; waits until it answers.
  Status restart_server();
  // Sends `sig` to worker `i` (in start order) and reaps it.
  void kill_worker(size_t i, int sig);

  std::string uri() const {
    return (tls() ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(port_);
  }
  uint16_t port() const { return static_cast<uint16_t>(port_); }
  CommandResult load_program(const std::string& dir) const;
  Result<HttpReply> get(const std::string& path) const;
  Result<HttpReply> post(const std::string& path, const std::string& body) const;
  const std::string& dir() const { return dir_; }
  pid_t server_pid() const { return server_; }
  const std::vector<pid_t>& worker_pids() const { return workers_; }
  bool server_alive() const;

 private:
  pid_t spawn(const std::vector<std::string>& argv, const std::string& log);
  Status start_server();
  std::string dir_;
  int port_ = 0;
  pid_t server_ = -1;
  std::vector<pid_t> workers_;
  std::string token_;
  ClusterTls tls_;
  std::vector<std::string> server_argv_;
};

}  // namespace lizard
