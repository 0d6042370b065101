#include "netns_cluster.h"

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/subprocess.h"

namespace lizard {
namespace {

using nlohmann::json;
constexpr int kPort = 5000;  // every host has its own ports

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `openssl ARGS` in `dir`; why it failed, or "".
std::string openssl(std::vector<std::string> args, const std::string& dir) {
  args.insert(args.begin(), "openssl");
  auto r = run_command(args, dir);
  if (!r.ok()) return r.status().message();
  return r->exit_code == 0 ? "" : r->output;
}

}  // namespace

NetnsCluster::NetnsCluster(int worker_hosts, int workers_per_host)
    : worker_hosts_(worker_hosts),
      workers_per_host_(workers_per_host),
      max_workers_(worker_hosts * workers_per_host),
      hosts_(worker_hosts + 2) {
  char tmpl[] = "/tmp/lizard-netns-XXXXXX";
  dir_ = mkdtemp(tmpl);
}

NetnsCluster::~NetnsCluster() {
  for (pid_t p : workers_) hosts_.stop(p);
  hosts_.stop(server_);
  std::error_code ec;
  if (!std::getenv("LIZARD_KEEP_TEST_DIRS")) std::filesystem::remove_all(dir_, ec);
}

std::string NetnsCluster::uri() const {
  return "https://" + NetnsHosts::address(server_host()) + ":" + std::to_string(kPort);
}

// A CA and, signed by it, a certificate for the server's bridge address.
Status NetnsCluster::make_certificates() {
  std::ofstream(dir_ + "/pki.cnf")
      << "[req]\ndistinguished_name = dn\nprompt = no\n[dn]\nCN = netns test CA\n"
         "[ca]\nbasicConstraints = critical,CA:TRUE\nkeyUsage = critical,keyCertSign,cRLSign\n"
         "[server]\nbasicConstraints = CA:FALSE\nkeyUsage = critical,digitalSignature\n"
         "extendedKeyUsage = serverAuth\nsubjectAltName = "
      <<
      [&] {  // the server's address, and the workers' (their fold ports serve it too)
        std::string names = "IP:" + NetnsHosts::address(server_host());
        for (int h = 0; h < worker_hosts_; ++h)
          names += ",IP:" + NetnsHosts::address(worker_host(h * workers_per_host_));
        return names;
      }()
      << "\n";
  std::ofstream(dir_ + "/server.cnf")
      << "[req]\ndistinguished_name = dn\nprompt = no\n[dn]\nCN = lizard server\n";
  const std::vector<std::string> key = {"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                                        "-nodes"};
  std::vector<std::string> ca = {"req",   "-x509", "-config", "pki.cnf", "-extensions", "ca",
                                 "-days", "2",     "-keyout", "ca.key",  "-out",        "ca.pem"};
  ca.insert(ca.end(), key.begin(), key.end());
  std::vector<std::string> csr = {"req",     "-new",       "-config", "server.cnf",
                                  "-keyout", "server.key", "-out",    "server.csr"};
  csr.insert(csr.end(), key.begin(), key.end());
  for (const auto& args :
       {ca, csr,
        std::vector<std::string>{"x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey",
                                 "ca.key", "-set_serial", "1", "-days", "2", "-extfile", "pki.cnf",
                                 "-extensions", "server", "-out", "server.pem"}})
    if (std::string why = openssl(args, dir_); !why.empty()) return unavailable("openssl: " + why);
  cert_ = dir_ + "/server.pem";
  key_ = dir_ + "/server.key";
  ca_ = dir_ + "/ca.pem";
  return Status::Ok();
}

Status NetnsCluster::start(int workers, const std::vector<std::string>& worker_args,
                           const std::vector<std::string>& server_args) {
  LIZARD_RETURN_IF_ERROR(hosts_.status());
  LIZARD_RETURN_IF_ERROR(make_certificates());
  server_argv_ = {LIZARD_BIN, "server", "-v", "--host", "0.0.0.0", "--port", std::to_string(kPort)};
  server_argv_.insert(server_argv_.end(), {"--state-dir", dir_ + "/server", "--tls-cert", cert_,
                                           "--tls-key", key_, "--token", token_});
  if (std::find(server_args.begin(), server_args.end(), "--worker-wait") == server_args.end())
    server_argv_.insert(server_argv_.end(), {"--worker-wait", "20"});
  server_argv_.insert(server_argv_.end(), server_args.begin(), server_args.end());
  LIZARD_RETURN_IF_ERROR(start_server());
  for (int i = 0; i < workers; ++i) LIZARD_RETURN_IF_ERROR(add_worker(worker_args));
  return wait_for_workers(static_cast<size_t>(workers));
}

Status NetnsCluster::start_server() {
  server_ = hosts_.spawn(server_host(), server_argv_, dir_ + "/server.log");
  if (server_ < 0) return internal_error("cannot start the server");
  for (int i = 0; i < 200; ++i) {
    auto r = get("/ruok");
    if (r.ok() && r->body == "imok") return Status::Ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return unavailable("the server did not answer within 10 s (log in " + dir_ + "/server.log)");
}

Status NetnsCluster::restart_server() {
  hosts_.kill_now(server_);
  return start_server();
}

Status NetnsCluster::add_worker(const std::vector<std::string>& extra, const SpawnOptions& opt) {
  const int i = static_cast<int>(workers_.size());
  if (i >= max_workers_) return invalid_argument("no host left for another worker");
  std::vector<std::string> argv = {LIZARD_BIN,
                                   "client",
                                   "-v",
                                   "-a",
                                   NetnsHosts::address(server_host()),
                                   "-p",
                                   std::to_string(kPort),
                                   "--tls-ca",
                                   ca_,
                                   "--token",
                                   token_,
                                   "--cache-dir",
                                   LIZARD_NETNS_COMPILE_CACHE,
                                   "--backend",
                                   "cpu",
                                   "--cpu-threads",
                                   "1",
                                   "--fold-tls-cert",
                                   cert_,
                                   "--fold-tls-key",
                                   key_};
  // As on a host of its own, the worker reads no file of the server's state
  // directory (an upload's copy): its data lie beneath data/.
  if (std::find(extra.begin(), extra.end(), "--data-root") == extra.end()) {
    std::filesystem::create_directories(dir_ + "/data");
    argv.insert(argv.end(), {"--data-root", dir_ + "/data"});
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  const pid_t pid =
      hosts_.spawn(worker_host(i), argv, dir_ + "/worker" + std::to_string(i) + ".log", opt);
  if (pid < 0) return internal_error("cannot start a worker");
  workers_.push_back(pid);
  return Status::Ok();
}

void NetnsCluster::kill_worker(int i) {
  hosts_.kill_now(workers_.at(static_cast<size_t>(i)));
  workers_[static_cast<size_t>(i)] = -1;
}

Status NetnsCluster::wait_for_workers(size_t n, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (worker_count() >= static_cast<int>(n)) return Status::Ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return unavailable("workers did not join within " + std::to_string(timeout_s) + " s (logs in " +
                     dir_ + ")");
}

int NetnsCluster::worker_count() {
  auto r = get("/clients");
  if (!r.ok() || r->status != 200) return -1;
  json j = json::parse(r->body, nullptr, false);
  return j.is_array() ? static_cast<int>(j.size()) : -1;
}

int NetnsCluster::workers_ready(const std::string& hash) {
  auto r = get("/clients");
  if (!r.ok() || r->status != 200) return -1;
  json j = json::parse(r->body, nullptr, false);
  if (!j.is_array()) return -1;
  int ready = 0;
  for (const json& w : j) {
    const json& build = w.value("programs", json::object()).value(hash, json());
    if (build.is_string() && build == "ready") ++ready;
  }
  return ready;
}

Result<HttpReply> NetnsCluster::get(const std::string& path) {
  return hosts_.in_host(user_host(), [&] {
    return http_request("GET", uri() + path, "", "", 10, token_, {true, ca_});
  });
}

Result<HttpReply> NetnsCluster::post(const std::string& path, const std::string& body) {
  return hosts_.in_host(user_host(), [&] {
    return http_request("POST", uri() + path, body, "application/json", 120, token_, {true, ca_});
  });
}

Result<HttpReply> NetnsCluster::upload_file(const std::string& path) {
  return hosts_.in_host(user_host(), [&] {
    return http_upload_file("POST", uri() + "/datasets", path, "application/octet-stream", 120,
                            token_, {true, ca_});
  });
}

json NetnsCluster::get_json(const std::string& path) {
  auto r = get(path);
  return r.ok() ? json::parse(r->body, nullptr, false) : json();
}

std::string NetnsCluster::register_program(const std::string& program_dir) {
  const std::string log = dir_ + "/load_program.log";
  std::filesystem::remove(log);
  const pid_t pid = hosts_.spawn(user_host(),
                                 {LOAD_PROGRAM_BIN, program_dir, uri(), "--timeout", "120",
                                  "--token", token_, "--tls-ca", ca_},
                                 log);
  const int code = hosts_.wait(pid, 180);
  const std::string out = read_file(log);
  const size_t end = out.find_last_not_of('\n');
  if (code != 0 || end == std::string::npos || end < 63) {
    std::fprintf(stderr, "load_program %s: exit %d\n%s\n", program_dir.c_str(), code, out.c_str());
    return "";
  }
  return out.substr(end - 63, 64);
}

std::string NetnsCluster::submit(const std::string& hash, const json& body) {
  auto r = post("/runtime/" + hash, body.dump());
  if (!r.ok() || r->status != 202) {
    std::fprintf(stderr, "POST /runtime/%s: %s\n", hash.c_str(),
                 r.ok() ? r->body.c_str() : r.status().message().c_str());
    return "";
  }
  return json::parse(r->body, nullptr, false).value("runtime_id", "");
}

json NetnsCluster::wait_until_finished(const std::string& id, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  json rec;
  while (std::chrono::steady_clock::now() < deadline) {
    json now = get_json("/runtimes/" + id);
    if (now.is_object()) rec = now;
    const std::string st = rec.value("status", "");
    if (st == "done" || st == "failed" || st == "cancelled") return rec;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return rec;
}

bool NetnsCluster::wait_for_iterations(const std::string& id, int64_t n, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    json rec = get_json("/runtimes/" + id);
    if (rec.is_object() && (rec.value("iterations", 0) >= n || rec.value("status", "") == "done"))
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

}  // namespace lizard
