// What a program author's code can reach, with real processes: a host.cpp
// hook looks at every descriptor its hook process has, tries accept() on
// the listening ones, and finds none of the server's or a worker's; an
// executor process after a kernel fault (restarted on the CPU backend, its
// context reset on a GPU) holds none of its worker's; children that a hook
// forks are reaped while they run and die with their hook process; and a
// server out of descriptors logs its failed accepts once a second and serves
// again once descriptors free up.
#include <arpa/inet.h>
#include <dirent.h>
#include <linux/kcmp.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "dataset/test_files.h"
#include "local_cluster.h"
#include "net/http_client.h"

namespace lizard {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Column sums (examples/sum's kernel) and a hook that, with mode 0, counts
// in its state what it can reach beyond fds 0 to 4 (its stdio, channel and
// mailboxes); with mode 1 forks a child that exits at once and one that
// sleeps, writes their pids to PID_FILE, and exits at iteration 8.
const char* kProbeConfig = R"(info: {name: Containment probe, version: "1.0"}
sources: {cuda: kernel.cu, host: host.cpp}
params:
  dims: {type: int32}
  mode: {type: int32, default: 0}
dataset:
  values: {type: float64, shape: [rows, dims]}
state:
  listening: {type: int64}
  tcp: {type: int64}
  accepted: {type: int64}
  extra: {type: int64}
  calls: {type: int64}
  hook_pid: {type: int64}
aggregate:
  sums:  {type: float64, shape: [dims], reduce: sum}
  count: {type: int64, reduce: sum}
iterate:
  - kernel: column_sums
)";

const char* kProbeHost = R"(#include <dirent.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include "lizard_program.h"

static void scan(global_state_t* s) {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return;
  const int own = dirfd(d);
  for (struct dirent* e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    const int fd = atoi(e->d_name);
    if (fd == own) continue;
    char link[64], target[256] = {0};
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    if (readlink(link, target, sizeof target - 1) < 0) target[0] = 0;
    if (fd > 4) {
      s->extra += 1;
      fprintf(stderr, "hook process %d holds descriptor %d: %s\n", (int)getpid(), fd, target);
    }
    int listening = 0;
    socklen_t len = sizeof listening;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0) continue;
    struct sockaddr_storage addr;
    socklen_t addr_len = sizeof addr;
    if (getsockname(fd, (struct sockaddr*)&addr, &addr_len) == 0 &&
        (addr.ss_family == AF_INET || addr.ss_family == AF_INET6))
      s->tcp += 1;
    if (!listening) continue;
    s->listening += 1;
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 0) == 1) {
      const int c = accept(fd, NULL, NULL);
      if (c >= 0) { s->accepted += 1; close(c); }
    }
  }
  closedir(d);
}

extern "C" int update_global_state(const global_params_t* p, const agg_res_t* r,
                                   global_state_t* s, int64_t iteration) {
  (void)r;
  s->calls += 1;
  s->hook_pid = getpid();
  if (p->mode == 0) scan(s);
  if (p->mode == 1) {
    if (iteration == 0) {
      const pid_t quick = fork();
      if (quick == 0) _exit(0);
      const pid_t sleeper = fork();
      if (sleeper == 0) for (;;) pause();
      FILE* f = fopen(PID_FILE, "w");
      fprintf(f, "%d %d %d\n", (int)getpid(), (int)quick, (int)sleeper);
      fclose(f);
    } else if (iteration == 8) {
      exit(3);
    } else {
      usleep(200 * 1000);
    }
  }
  return 0;
}
)";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// /proc/<pid>/stat's state letter and parent; state 0 once the process is gone.
struct ProcStat {
  char state = 0;
  pid_t ppid = 0;
};
ProcStat proc_stat(pid_t pid) {
  const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  ProcStat out;
  if (paren == std::string::npos) return out;
  std::istringstream rest(stat.substr(paren + 1));
  rest >> out.state >> out.ppid;
  return out;
}

// The inodes of this network namespace's TCP sockets (listening and connected).
std::set<std::string> tcp_socket_inodes() {
  std::set<std::string> out;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::istringstream in(read_text(table));
    std::string line;
    std::getline(in, line);  // the heading
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string field;
      for (int i = 0; i < 10 && f >> field; ++i) {
      }
      if (!field.empty() && field != "0") out.insert(field);  // the 10th: the inode
    }
  }
  return out;
}

std::vector<int> descriptors_of(pid_t pid) {
  std::vector<int> out;
  std::error_code ec;
  for (const auto& e :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec))
    out.push_back(std::stoi(e.path().filename().string()));
  return out;
}

// 0 where descriptor `a` of `pa` and `b` of `pb` are one open file (one was
// inherited from the other), 1 where they are not, -1 where the kernel
// cannot tell (kcmp(2) not permitted here).
int same_open_file(pid_t pa, int a, pid_t pb, int b) {
  const long r = syscall(SYS_kcmp, pa, pb, KCMP_FILE, a, b);
  if (r == 0) return 0;
  return r > 0 || (errno != ENOSYS && errno != EPERM && errno != EACCES) ? 1 : -1;
}

// What `pid` holds of its daemon's: any TCP socket, and beyond fds 0 to 4
// (stdio, channel, mailboxes, shared on purpose) any descriptor that is one
// open file with one of `daemon`'s.  A process's own descriptors (a GPU
// driver's) are not the daemon's.  Where the kernel cannot compare open
// files, every descriptor beyond fd 4 counts.
std::vector<std::string> foreign_descriptors(pid_t pid, pid_t daemon) {
  const auto tcp = tcp_socket_inodes();
  const std::vector<int> daemon_fds = descriptors_of(daemon);
  std::vector<std::string> out;
  for (int fd : descriptors_of(pid)) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(
                                   "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd), ec)
                                   .string();
    bool foreign =
        target.rfind("socket:[", 0) == 0 && tcp.count(target.substr(8, target.size() - 9)) > 0;
    for (size_t i = 0; !foreign && fd > 4 && i < daemon_fds.size(); ++i) {
      const int same = same_open_file(pid, fd, daemon, daemon_fds[i]);
      foreign = same <= 0;
    }
    if (foreign) out.push_back(std::to_string(fd) + " -> " + target);
  }
  return out;
}

class Containment : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new LocalCluster();
    Status st = cluster_->start(2, {"--cpu-threads", "1"});
    ASSERT_TRUE(st.ok()) << st.message();
    programs_ = new TempDir();
    const std::string dir = programs_->path("probe");
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/config.yaml") << kProbeConfig;
    std::ofstream(dir + "/kernel.cu") << read_text(LIZARD_SOURCE_DIR "/examples/sum/kernel.cu");
    pid_file_ = programs_->path("pids");
    std::ofstream(dir + "/host.cpp") << "#define PID_FILE \"" << pid_file_ << "\"\n" << kProbeHost;
    probe_ = register_program(*cluster_, dir);
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete programs_;
    cluster_ = nullptr;
    programs_ = nullptr;
  }
  void SetUp() override { ASSERT_FALSE(probe_.empty()); }

  static json probe_body(int mode, int executors, int iterations) {
    return {{"params", {{"dims", 2}, {"mode", mode}}},
            {"dataset", {{"values", {{"values", {{1.5, 2.5}, {3.0, 4.0}}}}}}},
            {"max_iterations", iterations},
            {"executors", executors}};
  }
  static std::string logs() {
    std::string out;
    for (const char* name : {"/server.log", "/worker0.log", "/worker1.log"})
      out += read_text(cluster_->dir() + name);
    return out;
  }

  static inline LocalCluster* cluster_ = nullptr;
  static inline TempDir* programs_ = nullptr;
  static inline std::string probe_, pid_file_;
};

// A hook process of the server (a run over both workers) and of a worker
// (a run on one executor, which its worker loops) holds no listening
// socket, no TCP connection and nothing else beyond its channel.
TEST_F(Containment, AHookFindsNoDescriptorOfTheDaemons) {
  std::set<pid_t> parents;
  for (int executors : {2, 1}) {
    json r = wait_until_finished(*cluster_,
                                 submit_run(*cluster_, probe_, probe_body(0, executors, 3)), 60);
    ASSERT_EQ(r["status"], "done") << r.dump(2);
    const json& s = r["result"]["state"];
    EXPECT_EQ(s["calls"], 3);
    EXPECT_EQ(s["listening"], 0) << "executors " << executors << "\n" << logs();
    EXPECT_EQ(s["accepted"], 0);
    EXPECT_EQ(s["tcp"], 0) << "executors " << executors;
    EXPECT_EQ(s["extra"], 0) << "executors " << executors << "\n" << logs();
    // An idle hook process waits for the program's next run: its parent
    // says which daemon ran it.
    parents.insert(proc_stat(static_cast<pid_t>(s["hook_pid"].get<int64_t>())).ppid);
  }
  EXPECT_EQ(parents.count(cluster_->server_pid()), 1u) << "no run's hooks ran on the server";
}

// The executor processes of both workers, one of them started again after
// its kernel crashed while the worker was connected, and the idle hook
// processes of the daemons, hold none of their daemon's descriptors.
TEST_F(Containment, AnExecutorProcessHoldsNoDescriptorOfItsWorker) {
  const std::string faults =
      register_program(*cluster_, LIZARD_SOURCE_DIR "/tests/e2e/programs/faults");
  ASSERT_FALSE(faults.empty());
  const json crash = {
      {"params", {{"mode", 2}}}, {"dataset", {{"x", {{"values", {1.0, 2.0}}}}}}, {"executors", 1}};
  json r = wait_until_finished(*cluster_, submit_run(*cluster_, faults, crash), 60);
  EXPECT_EQ(r["status"], "failed") << r.dump(2);
  // A run after the crash runs on the restarted executor process.
  json ok = wait_until_finished(*cluster_, submit_run(*cluster_, probe_, probe_body(0, 2, 1)), 60);
  ASSERT_EQ(ok["status"], "done") << ok.dump(2);
  size_t executors = 0;
  std::vector<pid_t> daemons = cluster_->worker_pids();
  daemons.push_back(cluster_->server_pid());
  for (pid_t daemon : daemons) {
    for (pid_t child : children_of(daemon)) {
      const std::string cmdline = read_text("/proc/" + std::to_string(child) + "/cmdline");
      const bool executor = cmdline.find("executor-host") != std::string::npos;
      if (!executor && cmdline.find("hook-host") == std::string::npos) continue;
      executors += executor;
      const auto held = foreign_descriptors(child, daemon);
      EXPECT_TRUE(held.empty()) << cmdline.c_str() << " process " << child << " of " << daemon
                                << " holds " << ::testing::PrintToString(held);
    }
  }
  EXPECT_GE(executors, 2u);
}

// Tokens from files, and none for user code: daemons started with the
// token in their environment and in --token-file serve, and the processes
// that run user code (executors, hooks) inherit no token.
TEST(TokenContainment, DaemonsTakeTokensFromFilesAndPassNoneToUserCode) {
  const std::string file = ::testing::TempDir() + "lizard-containment-token";
  std::ofstream(file) << "f1le-s3cret\n";
  chmod(file.c_str(), 0600);
  setenv("LIZARD_TOKEN", "f1le-s3cret", 1);  // what the daemons' environment holds
  LocalCluster c;
  c.set_token("f1le-s3cret");
  Status st = c.start(1, {"--token-file", file}, {"--token-file", file});
  unsetenv("LIZARD_TOKEN");
  ASSERT_TRUE(st.ok()) << st.message();
  const std::string sum = register_program(c, LIZARD_SOURCE_DIR "/examples/sum");
  ASSERT_FALSE(sum.empty());
  const json body = {{"params", {{"dims", 1}}}, {"dataset", {{"values", {{"values", {1, 2}}}}}}};
  json r = wait_until_finished(c, submit_run(c, sum, body), 60);
  ASSERT_EQ(r["status"], "done") << r.dump(2);
  size_t looked = 0;
  for (pid_t child : children_of(c.worker_pids().front())) {
    std::string environ = read_text("/proc/" + std::to_string(child) + "/environ");
    std::replace(environ.begin(), environ.end(), '\0', '\n');
    EXPECT_EQ(environ.find("LIZARD_TOKEN="), std::string::npos) << "process " << child;
    ++looked;
  }
  EXPECT_GE(looked, 1u) << "no executor process of the worker";
  std::remove(file.c_str());
}

// A hook's child that exits is reaped while the hook process lives; one
// that runs on is killed with its hook process.
// With the sandbox off (LIZARD_SANDBOX=off; with it on, a hook starts no
// process and writes no file: user_code_sandbox_test.cpp).
TEST_F(Containment, AHooksChildrenLeaveNoZombieAndDieWithIt) {
  std::filesystem::remove(pid_file_);
  ::setenv("LIZARD_SANDBOX", "off", 1);
  LocalCluster unsandboxed;
  Status st = unsandboxed.start(1, {"--cpu-threads", "1"});
  ::unsetenv("LIZARD_SANDBOX");
  ASSERT_TRUE(st.ok()) << st.message();
  const std::string probe = register_program(unsandboxed, programs_->path("probe"));
  ASSERT_FALSE(probe.empty());
  const std::string id = submit_run(unsandboxed, probe, probe_body(1, 1, 20));
  ASSERT_FALSE(id.empty());
  pid_t hook = 0, quick = 0, sleeper = 0;
  for (auto end = Clock::now() + std::chrono::seconds(30); Clock::now() < end && sleeper == 0;) {
    std::istringstream in(read_text(pid_file_));
    if (!(in >> hook >> quick >> sleeper)) sleeper = 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GT(sleeper, 0) << "the hook wrote no pids";
  // While the hook process serves iterations 1 to 7 (1.4 s).
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  const ProcStat q = proc_stat(quick);
  EXPECT_FALSE(q.state == 'Z' && q.ppid == hook) << "the hook's exited child is a zombie";
  EXPECT_EQ(proc_stat(sleeper).ppid, hook);
  json r = wait_until_finished(unsandboxed, id, 60);
  EXPECT_EQ(r["status"], "failed") << r.dump(2);
  EXPECT_NE(r.value("error", "").find("exited with status 3"), std::string::npos) << r.dump(2);
  ProcStat s = proc_stat(sleeper);
  for (auto end = Clock::now() + std::chrono::seconds(5);
       Clock::now() < end && s.state != 0 && s.state != 'Z';) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    s = proc_stat(sleeper);
  }
  EXPECT_TRUE(s.state == 0 || s.state == 'Z') << "the hook's child " << sleeper << " outlived it";
  if (s.state != 0 && s.state != 'Z') ::kill(sleeper, SIGKILL);
}

int connect_to(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

size_t count_lines_with(const std::string& text, const std::string& what) {
  size_t n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) n += line.find(what) != std::string::npos;
  return n;
}

// A server limited to 64 descriptors and offered 100 connections fails to
// accept the rest: it logs that a few times, not in a tight loop, and
// answers again once the connections close.
TEST(AcceptWhenOutOfDescriptors, LogsOnceASecondAndServesAgain) {
  LocalCluster c;
  ASSERT_TRUE(c.start(0).ok());
  const rlimit low{64, 64};
  ASSERT_EQ(::prlimit(c.server_pid(), RLIMIT_NOFILE, &low, nullptr), 0) << std::strerror(errno);
  std::vector<int> held;
  for (int i = 0; i < 100; ++i) {
    const int fd = connect_to(c.port());
    if (fd >= 0) held.push_back(fd);
  }
  EXPECT_GE(held.size(), 90u);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const size_t failures = count_lines_with(read_text(c.dir() + "/server.log"), "accept failed");
  EXPECT_GE(failures, 1u);
  EXPECT_LE(failures, 10u) << "the server logged " << failures << " failed accepts in 3 s";
  for (int fd : held) ::close(fd);
  bool answered = false;
  for (auto end = Clock::now() + std::chrono::seconds(10); Clock::now() < end && !answered;) {
    auto r = http_request("GET", c.uri() + "/ruok", "", "", 2);
    answered = r.ok() && r->body == "imok";
    if (!answered) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(answered) << "the server did not answer once the connections closed";
  EXPECT_TRUE(c.server_alive());
}

}  // namespace
}  // namespace lizard
