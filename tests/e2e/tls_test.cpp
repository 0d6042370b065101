// TLS end to end: a server with --tls-cert/--tls-key, a worker that joins
// over wss://, load_program and the REST API over https://, and the refusals
// a user meets (a CA that did not sign the server's certificate, no CA at
// all, a host name the certificate does not list, plain HTTP sent to the TLS
// port), with the server staying up.  The CA and certificates are made at
// test time with the `openssl` command.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli_process.h"
#include "common/subprocess.h"
#include "local_cluster.h"

namespace lizard {
namespace {

using nlohmann::json;

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `openssl ARGS`; the reason it failed, or "".
std::string openssl(std::vector<std::string> args) {
  args.insert(args.begin(), "openssl");
  auto r = run_command(args);
  if (!r.ok()) return r.status().message();
  return r->exit_code == 0 ? "" : r->output;
}

bool have_openssl() {
  auto r = run_command({"openssl", "version"});
  return r.ok() && r->exit_code == 0;
}

// A CA in `dir`/`name`-ca.pem and, signed by it, a server certificate for
// the IP address 127.0.0.1 (and no host name); "" or why not.
std::string make_pki(const std::string& dir, const std::string& name, ClusterTls* out) {
  const std::string p = dir + "/" + name;
  write_file(p + ".cnf",
             "[req]\ndistinguished_name = dn\nprompt = no\n[dn]\nCN = " + name +
                 " test CA\n[ca]\nbasicConstraints = critical,CA:TRUE\n"
                 "keyUsage = critical,keyCertSign,cRLSign\nsubjectKeyIdentifier = hash\n"
                 "[server_dn]\nCN = 127.0.0.1\n[server]\nbasicConstraints = CA:FALSE\n"
                 "keyUsage = critical,digitalSignature\nextendedKeyUsage = serverAuth\n"
                 "subjectAltName = IP:127.0.0.1\n");
  const std::vector<std::string> ec_key = {"-newkey", "ec", "-pkeyopt",
                                           "ec_paramgen_curve:prime256v1", "-nodes"};
  std::vector<std::string> ca = {"req",         "-x509",       "-config", p + ".cnf",
                                 "-extensions", "ca",          "-days",   "2",
                                 "-keyout",     p + "-ca.key", "-out",    p + "-ca.pem"};
  ca.insert(ca.end(), ec_key.begin(), ec_key.end());
  if (auto e = openssl(ca); !e.empty()) return e;
  write_file(p + "-server.cnf",
             "[req]\ndistinguished_name = dn\nprompt = no\n[dn]\nCN = 127.0.0.1\n");
  std::vector<std::string> csr = {
      "req",  "-new",           "-config", p + "-server.cnf", "-keyout", p + "-server.key",
      "-out", p + "-server.csr"};
  csr.insert(csr.end(), ec_key.begin(), ec_key.end());
  if (auto e = openssl(csr); !e.empty()) return e;
  if (auto e = openssl({"x509", "-req", "-in", p + "-server.csr", "-CA", p + "-ca.pem", "-CAkey",
                        p + "-ca.key", "-set_serial", "1", "-days", "2", "-extfile", p + ".cnf",
                        "-extensions", "server", "-out", p + "-server.pem"});
      !e.empty())
    return e;
  *out = {p + "-server.pem", p + "-server.key", p + "-ca.pem"};
  return "";
}

class Tls : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_openssl()) GTEST_SKIP() << "no openssl command to make certificates with";
    const std::string why = make_pki(cluster_.dir(), "lizard", &tls_);
    ASSERT_EQ(why, "");
    ClusterTls other;
    ASSERT_EQ(make_pki(cluster_.dir(), "other", &other), "");
    other_ca_ = other.ca;
    cluster_.use_tls(tls_);
  }

  std::string where() const { return "127.0.0.1:" + std::to_string(cluster_.port()); }

  LocalCluster cluster_;
  ClusterTls tls_;
  std::string other_ca_;
};

TEST_F(Tls, AWorkerOverWssRunsAProgramRegisteredOverHttps) {
  ASSERT_TRUE(cluster_.start(1).ok());  // the worker has joined over wss://
  const std::string hash = register_program(cluster_, LIZARD_SOURCE_DIR "/examples/sum");
  ASSERT_EQ(hash.size(), 64u);
  const std::string id =
      submit_run(cluster_, hash,
                 {{"params", {{"dims", 2}}},
                  {"dataset", {{"values", {{"values", {{1, 2}, {3, 4}, {5, 7}}}}}}}});
  ASSERT_FALSE(id.empty());
  const json rec = wait_until_finished(cluster_, id, 120);
  ASSERT_EQ(rec.value("status", ""), "done") << rec.dump(2);
  EXPECT_EQ(rec["result"]["aggregate"]["sums"], json({9.0, 13.0}));
  EXPECT_EQ(rec["result"]["aggregate"]["count"], 3);

  // The command line, with the CA given by flag and by environment.
  CliResult runs = run_cli(cluster_, {"runs", "-a", cluster_.uri(), "--tls-ca", tls_.ca});
  EXPECT_EQ(runs.exit_code, 0) << runs.err;
  EXPECT_NE(runs.out.find(id), std::string::npos) << runs.out;
  CliResult workers = run_cli(
      cluster_, {"workers", "-a", "127.0.0.1", "-p", std::to_string(cluster_.port()), "--tls"},
      {{"LIZARD_TLS_CA", tls_.ca}});
  EXPECT_EQ(workers.exit_code, 0) << workers.err;

  // Plain HTTP to the TLS port is told what to do instead.
  auto plain = http_request("GET", "http://" + where() + "/ruok", "", "", 10);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->status, 400);
  EXPECT_NE(plain->body.find("use https://"), std::string::npos) << plain->body;
}

// Workers that reach the server over TLS fold over TLS: with a certificate
// for their address they take fold links (the run folds along the tree);
// one signed by another CA is refused by the worker that dials it, and the
// run folds at the server; without one a worker takes no fold links.
TEST_F(Tls, WorkersFoldOverTlsWithTheirCertificatesAndAtTheServerWithout) {
  ASSERT_TRUE(cluster_
                  .start(3, {"--fold-tls-cert", tls_.cert, "--fold-tls-key", tls_.key},
                         {"--fold-fan-in", "2"})
                  .ok());
  const std::string hash = register_program(cluster_, LIZARD_SOURCE_DIR "/examples/sum");
  const json body = {{"params", {{"dims", 2}}},
                     {"dataset", {{"values", {{"values", {{1, 2}, {3, 4}, {5, 7}, {8, 9}}}}}}},
                     {"executors", 3}};
  json rec = wait_until_finished(cluster_, submit_run(cluster_, hash, body), 120);
  ASSERT_EQ(rec.value("status", ""), "done") << rec.dump(2);
  EXPECT_EQ(rec["result"]["aggregate"]["sums"], json({17.0, 22.0}));
  EXPECT_EQ(rec["phases"].value("fold_tree_senders", 0), 1) << rec["phases"].dump();
  for (const json& w : get_json(cluster_, "/clients")) EXPECT_TRUE(w["fold_address"].is_string());

  // One more with no certificate takes no fold links: runs on it fold at the server.
  ASSERT_TRUE(cluster_.add_worker().ok());
  ASSERT_TRUE(cluster_.wait_for_workers(4).ok());
  int without = 0;
  for (const json& w : get_json(cluster_, "/clients")) without += w["fold_address"].is_null();
  EXPECT_EQ(without, 1);
  json four = body;
  four["executors"] = 4;
  rec = wait_until_finished(cluster_, submit_run(cluster_, hash, four), 120);
  ASSERT_EQ(rec.value("status", ""), "done") << rec.dump(2);
  EXPECT_EQ(rec["result"]["aggregate"]["sums"], json({17.0, 22.0}));
  EXPECT_FALSE(rec["phases"].contains("fold_tree_senders")) << rec["phases"].dump();
}

// The worker that others send to (w1, the first to join) serves a
// certificate another CA signed: the workers that dial it refuse it, and the
// run goes on folded at the server, saying so.
TEST_F(Tls, AFoldLinkToACertificateOfAnotherCaIsRefusedAndTheServerFolds) {
  ClusterTls stranger;
  ASSERT_EQ(make_pki(cluster_.dir(), "stranger", &stranger), "");
  ASSERT_TRUE(cluster_.start(0, {}, {"--fold-fan-in", "2"}).ok());
  ASSERT_TRUE(
      cluster_.add_worker({"--fold-tls-cert", stranger.cert, "--fold-tls-key", stranger.key}).ok());
  ASSERT_TRUE(cluster_.wait_for_workers(1).ok());
  for (int i = 0; i < 2; ++i)
    ASSERT_TRUE(
        cluster_.add_worker({"--fold-tls-cert", tls_.cert, "--fold-tls-key", tls_.key}).ok());
  ASSERT_TRUE(cluster_.wait_for_workers(3).ok());
  const std::string hash = register_program(cluster_, LIZARD_SOURCE_DIR "/examples/sum");
  const json body = {{"params", {{"dims", 2}}},
                     {"dataset", {{"values", {{"values", {{1, 2}, {3, 4}, {5, 7}, {8, 9}}}}}}},
                     {"executors", 3}};
  const json rec = wait_until_finished(cluster_, submit_run(cluster_, hash, body), 120);
  ASSERT_EQ(rec.value("status", ""), "done") << rec.dump(2);
  EXPECT_EQ(rec["result"]["aggregate"]["sums"], json({17.0, 22.0}));
  EXPECT_EQ(rec["phases"].value("fold_tree_failed", false), true) << rec["phases"].dump();
  ASSERT_TRUE(rec.contains("recoveries"));
  EXPECT_EQ(rec["recoveries"][0]["kind"], "fold_tree_failed");
  EXPECT_NE(rec["recoveries"][0].value("reason", "").find("fold link"), std::string::npos)
      << rec["recoveries"].dump(2);
}

TEST_F(Tls, AServerCertificateThatDoesNotVerifyIsRefusedClearly) {
  ASSERT_TRUE(cluster_.start(0).ok());
  // A CA that did not sign the server's certificate.
  CliResult wrong_ca = run_cli(cluster_, {"runs", "-a", cluster_.uri(), "--tls-ca", other_ca_});
  EXPECT_EQ(wrong_ca.exit_code, 1);
  EXPECT_NE(wrong_ca.err.find("TLS: certificate verify failed for " + where()), std::string::npos)
      << wrong_ca.err;
  EXPECT_NE(wrong_ca.err.find("pass --tls-ca"), std::string::npos) << wrong_ca.err;

  // No CA: the system's roots do not know the test CA.
  auto no_ca = run_command({load_program_binary(), LIZARD_SOURCE_DIR "/examples/sum",
                            cluster_.uri(), "--timeout", "20"});
  ASSERT_TRUE(no_ca.ok());
  EXPECT_EQ(no_ca->exit_code, 1);
  EXPECT_NE(no_ca->output.find("certificate verify failed"), std::string::npos) << no_ca->output;

  // The right CA, but a host name the certificate does not list.
  CliResult wrong_name = run_cli(
      cluster_,
      {"runs", "-a", "https://localhost:" + std::to_string(cluster_.port()), "--tls-ca", tls_.ca});
  EXPECT_EQ(wrong_name.exit_code, 1);
  EXPECT_NE(wrong_name.err.find("certificate verify failed"), std::string::npos) << wrong_name.err;
  EXPECT_NE(wrong_name.err.find("not for this address"), std::string::npos) << wrong_name.err;

  // A worker trusting the other CA never joins, and its log says why.
  ASSERT_TRUE(cluster_.add_worker({"--tls-ca", other_ca_}).ok());
  std::string log;
  for (int i = 0; i < 100 && log.find("certificate verify failed") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    log = read_file(cluster_.dir() + "/worker0.log");
  }
  EXPECT_NE(log.find("TLS: certificate verify failed for " + where()), std::string::npos) << log;
  EXPECT_EQ(get_json(cluster_, "/clients"), json::array());

  // Through all of it, the server stayed up.
  EXPECT_TRUE(cluster_.server_alive());
}

}  // namespace
}  // namespace lizard
