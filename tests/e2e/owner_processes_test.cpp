// Each program's kernels in executor processes of their own
// (exec/process/owner_process_executor.h), with real daemons: a hostile CPU
// kernel of one program searches every byte its process can read — its
// memory through /proc/self/mem and every memory file among its
// descriptors — for another program's kept rows, and finds none, while it
// does find its own run's rows (the search is a real one); the other
// program's next run still takes its kept rows, unchanged.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "dataset/npy.h"
#include "local_cluster.h"
#include "sandbox/syscall_filter.h"

namespace lizard {
namespace {

using nlohmann::json;

const char* kSeekerConfig = R"(info: {name: Row seeker, version: "1.0"}
sources: {cuda: kernel.cu}
params:
  theirs: {type: float64}
  mine: {type: float64}
dataset:
  values: {type: float64, shape: [rows]}
aggregate:
  found_theirs: {type: int64, reduce: sum}
  found_mine: {type: int64, reduce: sum}
iterate:
  - kernel: seek
)";

// Counts the 8-byte words equal to `a` and to `b` in whatever this process
// can read.
const char* kSeekerKernel = R"(#include "lizard_program.h"
#ifdef LIZARD_CPU_BACKEND
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static void count_in(int fd, long long from, long long to, double a, double b, long long* na,
                     long long* nb) {
  static double buf[1 << 16];
  for (long long at = from; at < to;) {
    long long want = to - at < (long long)sizeof buf ? to - at : (long long)sizeof buf;
    const ssize_t got = pread(fd, buf, (size_t)want, at);
    if (got <= 0) return;
    for (ssize_t i = 0; i < got / 8; ++i) {
      *na += buf[i] == a;
      *nb += buf[i] == b;
    }
    at += got;
  }
}
static void seek(double a, double b, long long* na, long long* nb) {
  const int mem = open("/proc/self/mem", O_RDONLY);
  FILE* maps = fopen("/proc/self/maps", "r");
  char line[512];
  while (mem >= 0 && maps && fgets(line, sizeof line, maps)) {
    unsigned long long lo = 0, hi = 0;
    char perms[8] = {0};
    if (sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) != 3 || perms[0] != 'r') continue;
    if (strstr(line, "[vvar") || hi - lo > (1ULL << 30)) continue;
    count_in(mem, (long long)lo, (long long)hi, a, b, na, nb);
  }
  if (maps) fclose(maps);
  if (mem >= 0) close(mem);
  DIR* fds = opendir("/proc/self/fd");
  struct dirent* e;
  while (fds && (e = readdir(fds))) {
    char path[300], target[300];
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    const ssize_t n = readlink(path, target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = 0;
    if (!strstr(target, "memfd:") && !strstr(target, "/dev/shm/")) continue;
    const int fd = open(path, O_RDONLY);
    if (fd < 0) continue;
    count_in(fd, 0, lseek(fd, 0, SEEK_END), a, b, na, nb);
    close(fd);
  }
  if (fds) closedir(fds);
}
#endif
extern "C" __global__ void seek(global_params_t params, dataset_t data, global_state_t state,
                                agg_res_t result) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i != 0) return;
#ifdef LIZARD_CPU_BACKEND
  long long theirs = 0, mine = 0;
  seek(params.theirs, params.mine, &theirs, &mine);
  *result.found_theirs = theirs;
  *result.found_mine = mine;
#endif
}
)";

constexpr double kTheirs = 7777.25, kMine = 3333.5;
constexpr int64_t kTheirRows = 1000, kMyRows = 500;

void write_rows(const std::string& path, int64_t rows, double value) {
  std::vector<double> v(static_cast<size_t>(rows), value);
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      << npy_bytes(DType::kFloat64, {rows, 1}, v.data());
}

TEST(OwnerProcesses, AKernelFindsNoneOfAnotherProgramsKeptRowsWhichStayAsTheyWere) {
  LocalCluster c;
  ASSERT_TRUE(c.start(1, {"--backend", "cpu", "--cpu-threads", "1"}).ok());
  const std::string sum = register_program(c, LIZARD_SOURCE_DIR "/examples/sum");
  ASSERT_FALSE(sum.empty());
  const std::string dir = c.dir() + "/seeker";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.yaml") << kSeekerConfig;
  std::ofstream(dir + "/kernel.cu") << kSeekerKernel;
  const std::string seeker = register_program(c, dir);
  ASSERT_FALSE(seeker.empty()) << read_file(c.dir() + "/server.log");
  // With a second program compiled, the worker precompiles the runtime's
  // headers, which the confined executor processes can only read.
  const std::filesystem::path pch = c.dir() + "/cache0/kernels/pch";
  bool precompiled = false;
  for (int i = 0; i < 600 && !precompiled; ++i) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(pch, ec))
      precompiled |= e.path().extension() == ".gch";
    if (!precompiled) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(precompiled) << "no precompiled header in " << pch;

  const std::string victim = c.dir() + "/victim.npy", own = c.dir() + "/own.npy";
  write_rows(victim, kTheirRows, kTheirs);
  write_rows(own, kMyRows, kMine);
  const json sum_body = {
      {"params", {{"dims", 1}}}, {"dataset", {{"values", {{"path", victim}}}}}, {"executors", 1}};
  json r = wait_until_finished(c, submit_run(c, sum, sum_body), 60);
  ASSERT_EQ(r.value("status", ""), "done") << r.dump(2);
  EXPECT_EQ(r["result"]["aggregate"]["sums"][0], kTheirRows * kTheirs);

  const json seek_body = {{"params", {{"theirs", kTheirs}, {"mine", kMine}}},
                          {"dataset", {{"values", {{"path", own}}}}},
                          {"max_iterations", 1},
                          {"executors", 1}};
  for (int attempt = 0; attempt < 2; ++attempt) {  // the second over its own kept rows
    r = wait_until_finished(c, submit_run(c, seeker, seek_body), 60);
    ASSERT_EQ(r.value("status", ""), "done") << r.dump(2);
    EXPECT_LT(r["result"]["aggregate"]["found_theirs"].get<int64_t>(), 10) << r.dump(2);
    EXPECT_GE(r["result"]["aggregate"]["found_mine"].get<int64_t>(), kMyRows) << r.dump(2);
  }
  EXPECT_GT(r["phases"]["file_bytes_kept"].get<uint64_t>(), 0u) << r["phases"].dump();

  r = wait_until_finished(c, submit_run(c, sum, sum_body), 60);
  ASSERT_EQ(r.value("status", ""), "done") << r.dump(2);
  EXPECT_EQ(r["result"]["aggregate"]["sums"][0], kTheirRows * kTheirs);
  EXPECT_EQ(r["phases"]["file_bytes_kept"], kTheirRows * sizeof(double)) << r["phases"].dump();
  EXPECT_EQ(r["phases"]["file_bytes_read"], 0u);
}

// On the workers' own backend (the GPUs, where the machine has them): two
// programs run on every executor, each in a process (and on a GPU a
// context) of its own beside the executor's spare, and a deleted program's
// processes end.
TEST(OwnerProcesses, EachProgramHasAProcessOnEveryExecutorUntilItIsDeleted) {
  LocalCluster c;
  ASSERT_TRUE(c.start(1).ok());
  const json workers = get_json(c, "/clients");
  ASSERT_EQ(workers.size(), 1u) << workers.dump();
  const size_t executors = workers.begin().value()["hardware"]["executors"].size();
  ASSERT_GE(executors, 1u);
  const std::string sum = register_program(c, LIZARD_SOURCE_DIR "/examples/sum");
  const std::string copy = c.dir() + "/sum-copy";
  std::filesystem::copy(LIZARD_SOURCE_DIR "/examples/sum", copy,
                        std::filesystem::copy_options::recursive);
  std::ofstream(copy + "/config.yaml", std::ios::app) << "\n# a copy\n";
  const std::string other = register_program(c, copy);
  ASSERT_FALSE(sum.empty());
  ASSERT_FALSE(other.empty());
  const json body = {{"params", {{"dims", 1}}},
                     {"dataset", {{"values", {{"values", {{1.0}, {2.0}, {3.0}, {4.0}}}}}}},
                     {"executors", static_cast<int64_t>(executors)}};
  for (const std::string& program : {sum, other}) {
    json r = wait_until_finished(c, submit_run(c, program, body), 120);
    ASSERT_EQ(r.value("status", ""), "done") << r.dump(2);
    EXPECT_EQ(r["result"]["aggregate"]["sums"][0], 10.0);
  }
  const pid_t worker = c.worker_pids().front();
  auto settled = [&](size_t want) {
    size_t n = 0;
    for (int i = 0; i < 200 && (n = children_of(worker, "executor-host").size()) != want; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return n;
  };
  EXPECT_EQ(settled(3 * executors), 3 * executors) << "two programs and a spare per executor";
  auto del = http_request("DELETE", c.uri() + "/programs/" + other, "", "", 30);
  ASSERT_TRUE(del.ok());
  EXPECT_EQ(del->status, 200) << del->body;
  EXPECT_EQ(settled(2 * executors), 2 * executors) << "the deleted program's processes end";
}

// The line of /proc/PID/status that starts with `key`, past the key.
std::string status_field(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) {
      const size_t at = line.find_first_not_of(" \t", key.size());
      return at == std::string::npos ? "" : line.substr(at);
    }
  return "";
}

// On the backend the machine gives (a GPU's too): a program's builds lie
// among its own entries of the worker's cache, where its executor
// processes, confined to them, still build and run it; every executor
// process runs without privileges, under the system-call filter, and is the
// first the kernel ends when memory runs out.
TEST(OwnerProcesses, EachProgramsBuildsLieApartAndItsProcessesRunUnprivileged) {
  LocalCluster c;
  ASSERT_TRUE(c.start(1).ok());
  const std::string sum = register_program(c, LIZARD_SOURCE_DIR "/examples/sum");
  ASSERT_FALSE(sum.empty()) << read_file(c.dir() + "/server.log");
  const json body = {{"params", {{"dims", 1}}},
                     {"dataset", {{"values", {{"values", {{1.0}, {2.0}, {3.0}, {4.0}}}}}}}};
  json r = wait_until_finished(c, submit_run(c, sum, body), 120);
  ASSERT_EQ(r.value("status", ""), "done") << r.dump(2) << read_file(c.dir() + "/client-0.log");
  EXPECT_EQ(r["result"]["aggregate"]["sums"][0], 10.0);

  const std::filesystem::path kernels = c.dir() + "/cache0/kernels";
  size_t own = 0, loose = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(kernels / sum, ec))
    own += e.is_regular_file() && e.path().extension() != ".lock";
  for (const auto& e : std::filesystem::directory_iterator(kernels, ec))
    loose += e.is_regular_file();
  EXPECT_GE(own, 1u) << "the program's builds lie in its own directory";
  EXPECT_EQ(loose, 0u) << "no build lies outside an owner's directory";

  const std::vector<pid_t> executors = children_of(c.worker_pids().front(), "executor-host");
  ASSERT_FALSE(executors.empty());
  for (pid_t pid : executors) {
    SCOPED_TRACE("executor process " + std::to_string(pid));
    // A spare started in the program's process's place enters its sandbox
    // once its device is open (on a GPU, once its context is made), before
    // any program is given to it; the filter is the sandbox's last piece.
    const char* last = syscall_filter_built() ? "Seccomp:" : "NoNewPrivs:";
    for (int i = 0; i < 600 && status_field(pid, last) == "0"; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(status_field(pid, "NoNewPrivs:"), "1");
    EXPECT_EQ(status_field(pid, "CapEff:"), "0000000000000000");
    if (syscall_filter_built()) {
      EXPECT_EQ(status_field(pid, "Seccomp:"), "2");
    }
    EXPECT_EQ(read_file("/proc/" + std::to_string(pid) + "/oom_score_adj"), "1000\n");
  }
}

}  // namespace
}  // namespace lizard
