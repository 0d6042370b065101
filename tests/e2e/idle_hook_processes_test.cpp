// The hook processes the daemons keep idle between runs, with real
// processes: however many programs with a host.cpp are registered, a server
// keeps at most --idle-hook-processes of them (and a worker its own), the
// one idle longest ending first; a program whose process went still runs
// (it starts a new one); DELETE /programs/<hash> ends that program's idle
// processes on the server and on its workers (program_removed).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "dataset/test_files.h"
#include "local_cluster.h"
#include "net/http_client.h"

namespace lizard {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

const char* kDoneHost = R"(#include "lizard_program.h"
extern "C" int update_global_state(const global_params_t*, const agg_res_t*, global_state_t*,
                                   int64_t) { return 1; }
)";

// examples/sum with a host.cpp, named `name` so that its checksum is its own.
std::string write_program(const TempDir& dir, const std::string& name) {
  const std::string path = dir.path() + "/" + name;
  fs::create_directories(path);
  std::string config = read_file(LIZARD_SOURCE_DIR "/examples/sum/config.yaml");
  config.replace(config.find("Column sums"), 11, name);
  config.replace(config.find("  cuda: kernel.cu\n"), 18, "  cuda: kernel.cu\n  host: host.cpp\n");
  std::ofstream(path + "/config.yaml") << config;
  std::ofstream(path + "/host.cpp") << kDoneHost;
  fs::copy_file(LIZARD_SOURCE_DIR "/examples/sum/kernel.cu", path + "/kernel.cu");
  return path;
}

// The hook processes among `daemon`'s children.
size_t hook_processes(pid_t daemon) {
  return children_of(daemon, "hook-host").size();
}

// Waits up to 10 s for `daemon` to have `n` hook processes; how many it has.
size_t await_hook_processes(pid_t daemon, size_t n) {
  const auto until = Clock::now() + std::chrono::seconds(10);
  size_t now = hook_processes(daemon);
  while (now != n && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    now = hook_processes(daemon);
  }
  return now;
}

TEST(IdleHookProcesses, EachDaemonKeepsAtMostItsCapAndADeletedProgramsEndWithIt) {
  LocalCluster c;
  ASSERT_TRUE(c.start(1, {"--idle-hook-processes", "2"}, {"--idle-hook-processes", "3"}).ok());
  TempDir programs;
  std::vector<std::string> hashes;
  for (int i = 0; i < 5; ++i) {
    hashes.push_back(register_program(c, write_program(programs, "hooked" + std::to_string(i))));
    ASSERT_FALSE(hashes.back().empty()) << read_file(c.dir() + "/server.log");
  }
  // Each registration checked its host.cpp in a process it kept idle: the
  // caps hold the rest.
  EXPECT_EQ(await_hook_processes(c.server_pid(), 3), 3u);
  EXPECT_EQ(await_hook_processes(c.worker_pids()[0], 2), 2u);
  auto metrics = c.get("/metrics");
  ASSERT_TRUE(metrics.ok());
  EXPECT_NE(metrics->body.find("\nlizard_hook_processes_idle 3\n"), std::string::npos)
      << metrics->body;

  // The first program's process went; its run starts a new one, on the
  // server (--no-worker-loop is not set, so the worker drives a one-worker
  // run: its hooks run there).
  const json body = {{"params", {{"dims", 1}}},
                     {"dataset", {{"values", {{"values", {{1.0}, {2.0}, {4.0}}}}}}}};
  json r = wait_until_finished(c, submit_run(c, hashes[0], body), 60);
  ASSERT_EQ(r.value("status", ""), "done") << r.dump(2);
  EXPECT_EQ(r["result"]["aggregate"]["sums"], json::array({7.0}));
  EXPECT_EQ(await_hook_processes(c.server_pid(), 3), 3u);
  EXPECT_EQ(await_hook_processes(c.worker_pids()[0], 2), 2u);

  // The newest program holds an idle process on the server and on the
  // worker: deleting the program ends both.
  auto del = http_request("DELETE", c.uri() + "/programs/" + hashes[4], "", "", 30);
  ASSERT_TRUE(del.ok()) << del.status().message();
  EXPECT_EQ(del->status, 200) << del->body;
  EXPECT_EQ(await_hook_processes(c.server_pid(), 2), 2u);
  EXPECT_EQ(await_hook_processes(c.worker_pids()[0], 1), 1u);
  // Registered again, it builds and runs again.
  EXPECT_EQ(register_program(c, programs.path() + "/hooked4"), hashes[4]);
  r = wait_until_finished(c, submit_run(c, hashes[4], body), 60);
  EXPECT_EQ(r.value("status", ""), "done") << r.dump(2);
}

}  // namespace
}  // namespace lizard
