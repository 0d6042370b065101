// Requests that would block, against real daemons: dataset paths that name a
// FIFO, registrations whose host.cpp never finishes loading, and dataset
// paths whose symlink is repointed outside the data roots after the server
// checked them.  The server keeps answering everyone else meanwhile.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <sstream>
#include <thread>
#include <vector>

#include "local_cluster.h"

namespace lizard {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A reply with how long it took; status 0 when there was none.
struct Timed {
  int status = 0;
  std::string body;
  double seconds = 0;
};

Timed timed(const LocalCluster& c, const std::string& method, const std::string& path,
            const std::string& body = "", int timeout_s = 30) {
  const auto t0 = Clock::now();
  auto r = http_request(method, c.uri() + path, body, "application/json", timeout_s);
  Timed out;
  out.seconds = seconds_since(t0);
  if (r.ok()) {
    out.status = r->status;
    out.body = r->body;
  } else {
    out.body = r.status().message();
  }
  return out;
}

json path_run(const std::string& path) {
  return {{"params", {{"dims", 2}}},
          {"dataset", {{"values", {{"path", path}, {"format", "raw"}}}}}};
}

json values_run() {
  return {{"params", {{"dims", 1}}}, {"dataset", {{"values", {{"values", {1, 2, 3}}}}}}};
}

// A normal run, answered in full within `limit_s`.
void expect_a_run_within(const LocalCluster& c, const std::string& sum, double limit_s) {
  Timed run = timed(c, "POST", "/runtime/" + sum + "?wait=1", values_run().dump(), 30);
  ASSERT_EQ(run.status, 200) << run.body;
  EXPECT_EQ(json::parse(run.body)["status"], "done") << run.body;
  EXPECT_LT(run.seconds, limit_s) << "a normal run waited behind blocked requests";
}

// Gives a FIFO a writer and then puts an empty file in its place: anyone
// blocked opening it goes on (and reads its end), and later opens find a
// file, so that a failing test still ends.
void release_fifo(const std::string& fifo) {
  const int fd = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
  std::ofstream(fifo + ".empty").flush();
  fs::rename(fifo + ".empty", fifo);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (fd >= 0) ::close(fd);
}

TEST(Blocking, RunRequestsNamingAFifoGet400AtOnce) {
  LocalCluster c;
  ASSERT_TRUE(c.start(1).ok());
  const std::string sum = register_program(c, LIZARD_SOURCE_DIR "/examples/sum");
  ASSERT_FALSE(sum.empty());
  const std::string fifo = c.dir() + "/pipe.raw";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Requests the server lets block on the FIFO are released after 8 s, so
  // that the test ends (and fails on their times).
  std::atomic<bool> finished{false};
  std::thread watchdog([&] {
    const auto t0 = Clock::now();
    while (!finished && seconds_since(t0) < 8)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    release_fifo(fifo);
  });

  // More than the server's request pool has threads.
  std::vector<std::future<Timed>> fifo_runs;
  for (int i = 0; i < 6; ++i)
    fifo_runs.push_back(std::async(std::launch::async, [&] {
      return timed(c, "POST", "/runtime/" + sum, path_run(fifo).dump(), 10);
    }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  expect_a_run_within(c, sum, 5);
  for (auto& f : fifo_runs) {
    Timed r = f.get();
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_NE(r.body.find("not a regular file"), std::string::npos) << r.body;
    EXPECT_LT(r.seconds, 3) << r.body;
  }
  finished = true;
  watchdog.join();
  EXPECT_TRUE(c.server_alive());
}

// The hook-host processes the server has started that are still there.
int hook_processes_of(pid_t parent) {
  int n = 0;
  DIR* proc = ::opendir("/proc");
  if (!proc) return -1;
  while (dirent* e = ::readdir(proc)) {
    std::ifstream stat(std::string("/proc/") + e->d_name + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const size_t close_paren = line.rfind(')');
    if (close_paren == std::string::npos) continue;
    std::istringstream rest(line.substr(close_paren + 2));
    char state;
    pid_t ppid;
    rest >> state >> ppid;
    if (ppid != parent || state == 'Z') continue;
    std::ifstream cmd(std::string("/proc/") + e->d_name + "/cmdline");
    std::string argv((std::istreambuf_iterator<char>(cmd)), {});
    if (argv.find("hook-host") != std::string::npos) ++n;
  }
  ::closedir(proc);
  return n;
}

// A program whose host.cpp's static initialiser never returns; `n` makes
// each one a different program.
json never_loading_program(int n) {
  return {{"config", R"(info: {name: never-loads}
sources: {cuda: kernel.cu, host: host.cpp}
dataset: {x: {type: float32, shape: [rows]}}
aggregate: {sum: {type: float64, reduce: sum}}
iterate: [k]
)"},
          {"sources",
           {{"kernel.cu", "#include \"lizard_program.h\"\n"},
            {"host.cpp", "#include \"lizard_program.h\"\n#include <unistd.h>\n// program " +
                             std::to_string(n) + R"(
static int never = [] { for (;;) pause(); return 0; }();
extern "C" int update_global_state(const global_params_t*, const agg_res_t*,
                                   global_state_t*, int64_t) { return 1; }
)"}}}};
}

TEST(Blocking, HostCodeThatNeverLoadsHoldsNoRequestThreads) {
  LocalCluster c;
  const int deadline_s = 5;
  ASSERT_TRUE(c.start(1, {}, {"--hook-timeout-s", std::to_string(deadline_s)}).ok());
  const std::string sum = register_program(c, LIZARD_SOURCE_DIR "/examples/sum");
  ASSERT_FALSE(sum.empty());

  const auto t0 = Clock::now();
  std::vector<std::future<Timed>> registrations;
  for (int i = 0; i < 5; ++i)  // more than the request pool's four threads
    registrations.push_back(std::async(std::launch::async, [&c, i] {
      return timed(c, "POST", "/programs", never_loading_program(i).dump(), 60);
    }));
  // While they hang, everything else is answered.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  while (seconds_since(t0) < deadline_s - 1) {
    Timed ruok = timed(c, "GET", "/ruok");
    EXPECT_EQ(ruok.status, 200) << ruok.body;
    EXPECT_LT(ruok.seconds, 1);
    Timed runs = timed(c, "GET", "/runtimes");
    EXPECT_EQ(runs.status, 200) << runs.body;
    EXPECT_LT(runs.seconds, 1);
    // A run held behind the registrations would wait for their 5 s deadline
    // (4.5 s for the first one here); the host compiles of five
    // registrations slow a normal run on two busy cores, to about 3 s.
    expect_a_run_within(c, sum, 4.0);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  // Each registration fails with what happened, once the deadline passed.
  int timed_out = 0;
  for (auto& f : registrations) {
    Timed r = f.get();
    const std::string error = json::parse(r.body, nullptr, false).value("error", r.body);
    EXPECT_TRUE(r.status == 422 || r.status == 503) << r.status << " " << r.body;
    EXPECT_NE(error.find("(--hook-timeout)"), std::string::npos) << error;
    if (r.status == 422) {
      ++timed_out;
      EXPECT_NE(error.find("did not finish within 5 s"), std::string::npos) << error;
    }
    EXPECT_GE(r.seconds, deadline_s - 0.5) << r.body;
    EXPECT_LT(r.seconds, 4 * deadline_s) << r.body;
  }
  EXPECT_GE(timed_out, 1);
  EXPECT_EQ(hook_processes_of(c.server_pid()), 0) << "a hanging hook process was left running";
  auto programs = json::parse(c.get("/programs")->body);
  EXPECT_EQ(programs.size(), 1u) << programs.dump(2);
  expect_a_run_within(c, sum, 5);
}

TEST(Blocking, TheWorkerOpensPathsWithinTheServersDataRoots) {
  LocalCluster c;
  const std::string root = c.dir() + "/data";
  fs::create_directories(root);
  // The server is confined to data/; the worker has no roots of its own.
  ASSERT_TRUE(c.start(0, {}, {"--data-root", root}).ok());
  const std::string sum = register_program(c, LIZARD_SOURCE_DIR "/examples/sum");
  ASSERT_FALSE(sum.empty());
  const std::vector<double> rows = {1, 2, 3, 4, 5, 6};
  std::ofstream(root + "/rows.raw", std::ios::binary)
      .write(reinterpret_cast<const char*>(rows.data()), sizeof(double) * rows.size());
  const std::vector<double> secret = {100, 200, 300, 400, 500, 600};
  std::ofstream(c.dir() + "/secret.raw", std::ios::binary)
      .write(reinterpret_cast<const char*>(secret.data()), sizeof(double) * secret.size());
  fs::create_symlink(root + "/rows.raw", root + "/link.raw");

  // Checked on the server while the link points inside; it is repointed
  // outside before any worker reads it.
  const std::string id = submit_run(c, sum, path_run(root + "/link.raw"));
  ASSERT_FALSE(id.empty());
  fs::remove(root + "/link.raw");
  fs::create_symlink(c.dir() + "/secret.raw", root + "/link.raw");
  ASSERT_TRUE(c.add_worker().ok());
  ASSERT_TRUE(c.wait_for_workers(1).ok());
  json rec = wait_until_finished(c, id, 60);
  EXPECT_EQ(rec["status"], "failed") << rec.dump(2);
  EXPECT_NE(rec.value("error", "")
                .find("dataset field 'values': dataset path is outside the server's data roots "
                      "(--data-root)"),
            std::string::npos)
      << rec.dump(2);
  EXPECT_FALSE(rec.contains("result") &&
               rec["result"]["aggregate"]["sums"] == json({900.0, 1200.0}))
      << "the worker read the file outside the roots";

  // A file inside the roots is read by the worker as before.
  auto ok = c.post("/runtime/" + sum + "?wait=1", path_run(root + "/rows.raw").dump());
  ASSERT_TRUE(ok.ok());
  json done = json::parse(ok->body);
  EXPECT_EQ(done["status"], "done") << ok->body;
  EXPECT_EQ(done["result"]["aggregate"]["sums"], json({9.0, 12.0})) << ok->body;
}

}  // namespace
}  // namespace lizard
