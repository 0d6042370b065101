// User code in its sandbox (sandbox/sandbox.h), with real processes: a
// hostile host.cpp, run by the server's hook process and by a worker's,
// and a hostile CPU kernel, run by an executor process, try each way out
// of their sandbox and count the ones that worked in their results.  With
// the sandbox on every count is 0 and the runs still end `done`; the same
// probes with LIZARD_SANDBOX=off reach what a process of the daemons' user
// can, which shows that they are real tries.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "local_cluster.h"
#include "sandbox/landlock.h"
#include "sandbox/syscall_filter.h"

namespace lizard {
namespace {

using nlohmann::json;

// What the hook and the kernel try; each a state (hook) or aggregate
// (kernel) field of int64, 1 where it worked.
const char* kConfig = R"(info: {name: Sandbox probe, version: "1.0"}
sources: {cuda: kernel.cu, host: host.cpp}
params:
  dims: {type: int32}
dataset:
  values: {type: float64, shape: [rows, dims]}
state:
  ptrace: {type: int64}
  pidfd_getfd: {type: int64}
  environ: {type: int64}
  cmdline: {type: int64}
  state_dir: {type: int64}
  log_file: {type: int64}
  cache_read: {type: int64}
  write_outside: {type: int64}
  fork: {type: int64}
  memory: {type: int64}
  tcp: {type: int64}
  signal: {type: int64}
aggregate:
  k_ptrace: {type: int64, reduce: sum}
  k_pidfd_getfd: {type: int64, reduce: sum}
  k_environ: {type: int64, reduce: sum}
  k_cmdline: {type: int64, reduce: sum}
  k_state_dir: {type: int64, reduce: sum}
  k_log_file: {type: int64, reduce: sum}
  k_cache_read: {type: int64, reduce: sum}
  k_cache_write: {type: int64, reduce: sum}
  k_memory: {type: int64, reduce: sum}
  k_write_outside: {type: int64, reduce: sum}
  k_fork: {type: int64, reduce: sum}
  k_tcp: {type: int64, reduce: sum}
  k_signal: {type: int64, reduce: sum}
iterate:
  - kernel: probe
)";

// Shared by the hook and the kernel (on the CPU backend): each try, against
// the process's parent (the daemon that started it).  CLUSTER_DIR, OUTSIDE
// and PORT are defined ahead of it by the test.
const char* kTries = R"(
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
static long long try_ptrace() { return ptrace(PTRACE_ATTACH, getppid(), 0, 0) == 0; }
static long long try_pidfd_getfd() {
  const long pidfd = syscall(SYS_pidfd_open, getppid(), 0);
  long long got = 0;
  for (int fd = 3; pidfd >= 0 && fd < 64; ++fd) {
    const long taken = syscall(SYS_pidfd_getfd, pidfd, fd, 0);
    if (taken >= 0) { got = 1; close((int)taken); }
  }
  return got;
}
static long long try_open(const char* what, int flags) {
  char path[512];
  snprintf(path, sizeof path, what, (int)getppid());
  const int fd = open(path, flags, 0600);
  if (fd >= 0) close(fd);
  return fd >= 0;
}
static long long try_tcp() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_port = htons(PORT);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int rc = connect(s, (struct sockaddr*)&a, sizeof a);
  close(s);
  return rc == 0;
}
static long long try_signal() { return kill(getppid(), 0) == 0; }
static long long try_each(const char* const* paths, int flags) {
  long long got = 0;
  for (; *paths; ++paths) {
    const int fd = open(*paths, flags);
    if (fd >= 0) { got = 1; close(fd); }
  }
  return got;
}
static long long try_fork() {
  const int child = fork();
  if (child == 0) _exit(0);
  if (child > 0) waitpid(child, 0, 0);
  return child > 0;
}
)";

const char* kKernel = R"(
extern "C" __global__ void probe(global_params_t params, dataset_t data, global_state_t state,
                                 agg_res_t result) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i != 0) return;
#ifdef LIZARD_CPU_BACKEND
  *result.k_ptrace = try_ptrace();
  *result.k_pidfd_getfd = try_pidfd_getfd();
  *result.k_environ = try_open("/proc/%d/environ", O_RDONLY);
  *result.k_cmdline = try_open("/proc/%d/cmdline", O_RDONLY);
  DIR* cluster = opendir(CLUSTER_DIR);
  *result.k_state_dir = cluster != 0;
  if (cluster) closedir(cluster);
  *result.k_log_file = try_open(CLUSTER_DIR "/server.log", O_RDONLY);
  static const char* const victim[] = {VICTIM_ENTRIES 0};
  *result.k_cache_read = try_each(victim, O_RDONLY);
  *result.k_cache_write = try_each(victim, O_WRONLY);
  void* big = malloc(6ULL << 30);
  *result.k_memory = big != 0;
  free(big);
  *result.k_write_outside = try_open(OUTSIDE "/from-kernel", O_CREAT | O_WRONLY);
  *result.k_fork = try_fork();
  *result.k_tcp = try_tcp();
  *result.k_signal = try_signal();
#endif
}
)";

const char* kHost = R"(#include "lizard_program.h"
extern "C" int update_global_state(const global_params_t* p, const agg_res_t* r,
                                   global_state_t* s, int64_t iteration) {
  (void)p; (void)r; (void)iteration;
  s->ptrace = try_ptrace();
  s->pidfd_getfd = try_pidfd_getfd();
  s->environ = try_open("/proc/%d/environ", O_RDONLY);
  s->cmdline = try_open("/proc/%d/cmdline", O_RDONLY);
  s->state_dir = opendir(CLUSTER_DIR) != 0;
  s->log_file = try_open(CLUSTER_DIR "/server.log", O_RDONLY);
  static const char* const victim[] = {VICTIM_ENTRIES 0};
  s->cache_read = try_each(victim, O_RDONLY);
  s->write_outside = try_open(OUTSIDE "/from-hook", O_CREAT | O_WRONLY);
  s->fork = try_fork();
  void* big = malloc(6ULL << 30);
  s->memory = big != 0;
  free(big);
  s->tcp = try_tcp();
  s->signal = try_signal();
  return 1;
}
)";

class UserCodeSandbox : public ::testing::Test {
 protected:
  // A cluster of two CPU workers, with the sandbox on or off, and another
  // program (examples/sum) built on both, whose cache entries the probe
  // tries to open.
  void start(bool sandbox) {
    if (!sandbox) ::setenv("LIZARD_SANDBOX", "off", 1);
    // The CPU backend on any machine: the kernel's tries are host code.
    Status st = c_.start(2, {"--backend", "cpu", "--cpu-threads", "1", "--cpu-memory-mb", "2048"});
    ::unsetenv("LIZARD_SANDBOX");
    ASSERT_TRUE(st.ok()) << st.message();
    const std::string sum = register_program(c_, LIZARD_SOURCE_DIR "/examples/sum");
    ASSERT_FALSE(sum.empty()) << read_file(c_.dir() + "/server.log");
    std::string victims;
    for (const auto& cache : std::filesystem::directory_iterator(c_.dir())) {
      std::error_code ec;
      for (const auto& e : std::filesystem::directory_iterator(cache.path() / "kernels" / sum, ec))
        if (e.path().extension() == ".so") victims += "\"" + e.path().string() + "\", ";
    }
    ASSERT_FALSE(victims.empty()) << "examples/sum has no build in a worker's cache";
    outside_ = c_.dir() + "/outside";
    std::filesystem::create_directories(outside_);
    const std::string dir = c_.dir() + "/probe";
    std::filesystem::create_directories(dir);
    const std::string defines = "#define CLUSTER_DIR \"" + c_.dir() + "\"\n#define OUTSIDE \"" +
                                outside_ + "\"\n#define PORT " + std::to_string(c_.port()) +
                                "\n#define VICTIM_ENTRIES " + victims + "\n";
    std::ofstream(dir + "/config.yaml") << kConfig;
    std::ofstream(dir + "/kernel.cu")
        << "#include \"lizard_program.h\"\n#ifdef LIZARD_CPU_BACKEND\n"
        << defines << kTries << "#endif\n"
        << kKernel;
    std::ofstream(dir + "/host.cpp") << defines << kTries << kHost;
    hash_ = register_program(c_, dir);
    ASSERT_FALSE(hash_.empty()) << read_file(c_.dir() + "/server.log");
  }
  // A run over `executors` executors: 2 has its hook on the server, 1 on
  // the worker that loops the run.
  json run(int executors) {
    json body = {{"params", {{"dims", 1}}},
                 {"dataset", {{"values", {{"values", {{1.0}, {2.0}}}}}}},
                 {"max_iterations", 1},
                 {"executors", executors}};
    return wait_until_finished(c_, submit_run(c_, hash_, body), 120);
  }
  LocalCluster c_;
  std::string outside_, hash_;
};

const char* kHookTries[] = {"ptrace",    "pidfd_getfd", "environ",    "cmdline",
                            "state_dir", "log_file",    "cache_read", "fork",
                            "memory",    "tcp",         "signal",     "write_outside"};
const char* kKernelTries[] = {"k_ptrace",    "k_pidfd_getfd",   "k_environ",    "k_cmdline",
                              "k_state_dir", "k_log_file",      "k_cache_read", "k_cache_write",
                              "k_memory",    "k_write_outside", "k_fork",       "k_tcp",
                              "k_signal"};

// What this machine's kernel and build let the sandbox refuse.
bool refused_here(const std::string& what) {
  const bool filter = syscall_filter_built();
  const int abi = landlock_abi();
  if (what == "ptrace" || what == "pidfd_getfd" || what == "fork" || what == "k_ptrace" ||
      what == "k_pidfd_getfd" || what == "k_fork")
    return filter;
  if (what == "signal") return filter || abi >= 6;
  if (what == "k_signal") return abi >= 6;
  if (what == "tcp" || what == "k_tcp") return abi >= 4;
  if (what == "k_environ" || what == "memory" || what == "k_memory") return true;
  return abi > 0;  // the files
}

TEST_F(UserCodeSandbox, AHostileHookAndKernelReachNothingOutside) {
  start(true);
  for (int executors : {2, 1}) {
    SCOPED_TRACE("executors " + std::to_string(executors));
    json r = run(executors);
    ASSERT_EQ(r.value("status", ""), "done") << r.dump(2) << read_file(c_.dir() + "/server.log");
    // A sanitized server's hooks have no memory limit; its log says so.
    const bool memory_limited =
        read_file(c_.dir() + "/server.log").find("hooks' memory ") != std::string::npos;
    for (const char* what : kHookTries) {
      if (!refused_here(what) || (std::string(what) == "memory" && !memory_limited)) continue;
      EXPECT_EQ(r["result"]["state"][what], 0) << what;
    }
    for (const char* what : kKernelTries) {
      if (!refused_here(what) || (std::string(what) == "k_memory" && !memory_limited)) continue;
      EXPECT_EQ(r["result"]["aggregate"][what], 0) << what;
    }
  }
  EXPECT_FALSE(std::filesystem::exists(outside_ + "/from-hook"));
  EXPECT_FALSE(std::filesystem::exists(outside_ + "/from-kernel"));
  EXPECT_NE(read_file(c_.dir() + "/server.log").find("user code's sandbox: "), std::string::npos);
}

// The same probes without the sandbox reach what any process of the
// daemons' user reaches: the tries above are real ones.
TEST_F(UserCodeSandbox, WithTheSandboxOffTheSameProbesReachTheirTargets) {
  start(false);
  json r = run(2);
  ASSERT_EQ(r.value("status", ""), "done") << r.dump(2);
  const json& s = r["result"]["state"];
  for (const char* what :
       {"cmdline", "state_dir", "log_file", "cache_read", "write_outside", "fork", "tcp", "signal"})
    EXPECT_EQ(s[what], 1) << what;
  const json& a = r["result"]["aggregate"];
  // Summed over the run's two executors.
  for (const char* what : {"k_cmdline", "k_state_dir", "k_log_file", "k_cache_read",
                           "k_cache_write", "k_write_outside", "k_fork", "k_tcp", "k_signal"})
    EXPECT_GE(a[what], 1) << what;
  EXPECT_TRUE(std::filesystem::exists(outside_ + "/from-hook"));
  EXPECT_NE(read_file(c_.dir() + "/server.log").find("LIZARD_SANDBOX=off"), std::string::npos);
}

}  // namespace
}  // namespace lizard
