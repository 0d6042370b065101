// NetnsCluster: a lizard cluster across NetnsHosts, as on separate machines:
// `lizard server` on host 0, CPU workers on hosts 1..W (one each, or several), and the
// user (the test's requests, load_program) on host W+1, all over TLS with a
// token.  The one certificate names the server's and the workers' bridge
// addresses: the workers serve it on their fold ports too.
//
//   NetnsCluster c;
//   if (!c.available()) GTEST_SKIP() << c.why_unavailable();
//   ASSERT_TRUE(c.start(2).ok());
//   std::string hash = c.register_program(LIZARD_SOURCE_DIR "/examples/sum");
//   json rec = c.wait_until_finished(c.submit(hash, body), 60);
//   c.hosts().cut(c.worker_host(0));        // a partition
#pragma once

#include <sys/types.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "common/status.h"
#include "net/http_client.h"
#include "netns_hosts.h"

namespace lizard {

class NetnsCluster {
 public:
  // Hosts for a server, `worker_hosts` hosts of `workers_per_host` workers
  // each, and a user.
  explicit NetnsCluster(int worker_hosts = 2, int workers_per_host = 1);
  ~NetnsCluster();

  bool available() const { return hosts_.status().ok(); }
  std::string why_unavailable() const { return hosts_.status().message(); }

  // Makes the certificates, starts the server and `workers` workers (each
  // with `worker_args`), and waits until they have joined.
  Status start(int workers, const std::vector<std::string>& worker_args = {},
               const std::vector<std::string>& server_args = {});
  // Starts one more worker on the next worker host.
  Status add_worker(const std::vector<std::string>& extra_args = {},
                    const SpawnOptions& options = {});
  Status wait_for_workers(size_t n, int timeout_s = 30);
  // SIGKILL, then the server starts again with the same state directory.
  Status restart_server();
  void kill_worker(int i);

  NetnsHosts& hosts() { return hosts_; }
  int server_host() const { return 0; }
  // The host of worker i (in start order): workers fill a host before the next.
  int worker_host(int i) const { return 1 + i / workers_per_host_; }
  int user_host() const { return 1 + worker_hosts_; }
  std::string uri() const;
  const std::string& dir() const { return dir_; }

  // From the user's host, with the token and the CA.
  Result<HttpReply> get(const std::string& path);
  Result<HttpReply> post(const std::string& path, const std::string& body);
  Result<HttpReply> upload_file(const std::string& path);
  nlohmann::json get_json(const std::string& path);
  // load_program from the user's host; the checksum ("" on failure, logged).
  std::string register_program(const std::string& program_dir);
  // POST /runtime/<hash>: the run id ("" when refused, logged).
  std::string submit(const std::string& hash, const nlohmann::json& body);
  // Polls the run until it is done, failed or cancelled, or the time is up.
  nlohmann::json wait_until_finished(const std::string& id, int timeout_s);
  // Polls until the run has made `n` iterations (or finished); false on time out.
  bool wait_for_iterations(const std::string& id, int64_t n, int timeout_s = 60);
  // The workers GET /clients lists (-1 when the server does not answer).
  int worker_count();
  // The workers GET /clients lists with `hash` built ("ready"); -1 as above.
  int workers_ready(const std::string& hash);

 private:
  Status make_certificates();
  Status start_server();

  int worker_hosts_, workers_per_host_, max_workers_;
  NetnsHosts hosts_;
  std::string dir_, token_ = "netns-s3cret", cert_, key_, ca_;
  std::vector<std::string> server_argv_;
  pid_t server_ = -1;
  std::vector<pid_t> workers_;
};

}  // namespace lizard
