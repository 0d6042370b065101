// CliProcess: the `lizard` command line run as a user runs it, against a
// LocalCluster, with stdout and stderr kept apart and a bound on its time.
//
//   CliResult r = run_cli(cluster, {"run", "examples/kmeans", "--param", "k=4"});
//   EXPECT_EQ(r.exit_code, 0) << r.err;
//
//   CliProcess p(cluster, {"run", ...});      // started, not waited for
//   p.signal(SIGINT);
//   CliResult r = p.wait(30);
//
//   CliResult t = run_cli_in_terminal(cluster, {"run", ...});   // on a pseudo-terminal:
//   t.out holds stdout and stderr as the terminal got them ('\r' and all)
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "local_cluster.h"

namespace lizard {

struct CliResult {
  int exit_code = -1;  // 128 + signal when killed; -1 when it overran its time
  std::string out;
  std::string err;
};

class CliProcess {
 public:
  // Runs lizard_binary() with `args`, then -a/-p of the cluster unless `args`
  // has -a or `env` has LIZARD_ADDRESS.  The environment is the test's without LIZARD_TOKEN,
  // LIZARD_ADDRESS and LIZARD_TLS_CA, plus `env`.
  CliProcess(const LocalCluster& c, const std::vector<std::string>& args,
             const std::map<std::string, std::string>& env = {});
  ~CliProcess();
  CliProcess(const CliProcess&) = delete;
  CliProcess& operator=(const CliProcess&) = delete;

  void signal(int sig) const;
  // Waits up to `timeout_s`; a process still running then is killed.
  CliResult wait(int timeout_s);

 private:
  std::string out_path_, err_path_;
  pid_t pid_ = -1;
};

CliResult run_cli(const LocalCluster& c, const std::vector<std::string>& args,
                  const std::map<std::string, std::string>& env = {}, int timeout_s = 180);

// Runs the command with stdout and stderr on a pseudo-terminal, as in a
// person's shell; `out` is what the terminal received, `err` stays empty.
CliResult run_cli_in_terminal(const LocalCluster& c, const std::vector<std::string>& args,
                              int timeout_s = 180);

}  // namespace lizard
