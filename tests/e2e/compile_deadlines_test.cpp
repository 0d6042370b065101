// Compiles on a deadline and includes of the program's own files only, with
// a real server and CPU worker: an #include of a file outside the program is
// refused at registration without a line of the file in the answer, and so
// is an assembler's read of one (the compiler hosts' sandbox); a
// host.cpp whose compile never ends fails at
// --compile-timeout and frees its build slot; a registration that waits past
// that deadline for a slot is answered 503; a kernel whose static
// initialiser never returns fails its build while other programs build and
// run on the same worker; load_program gives up at its --timeout.  Each test
// takes seconds: its deadlines are a few seconds.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "common/subprocess.h"
#include "dataset/test_files.h"
#include "local_cluster.h"
#include "program/bundle.h"
#include "sandbox/landlock.h"
#include "sandbox/sandbox.h"

namespace lizard {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

const std::string kSumKernel = read_file(LIZARD_SOURCE_DIR "/examples/sum/kernel.cu");

// examples/sum with a host.cpp (its `host` text) and `prefix` before its
// kernel; `name` makes each program's checksum its own.
std::string write_program(const TempDir& dir, const std::string& name, const std::string& prefix,
                          const std::string& host = "") {
  const std::string path = dir.path() + "/" + name;
  fs::create_directories(path);
  std::string config = read_file(LIZARD_SOURCE_DIR "/examples/sum/config.yaml");
  config.replace(config.find("Column sums"), 11, name);
  if (!host.empty()) {
    config.replace(config.find("  cuda: kernel.cu\n"), 18, "  cuda: kernel.cu\n  host: host.cpp\n");
    std::ofstream(path + "/host.cpp") << host;
  }
  std::ofstream(path + "/config.yaml") << config;
  std::ofstream(path + "/kernel.cu") << prefix << kSumKernel;
  return path;
}

// A host.cpp with one hook whose static initialiser never returns.
const char* kSpinningHost = R"(#include "lizard_program.h"
static int spin() { for (volatile long i = 0;; i = i + 1) {} return 0; }
static int never = spin();
extern "C" int update_global_state(const global_params_t*, const agg_res_t*, global_state_t*,
                                   int64_t) { return 1; }
)";

const char* kPlainHost = R"(#include "lizard_program.h"
extern "C" int update_global_state(const global_params_t*, const agg_res_t*, global_state_t*,
                                   int64_t) { return 1; }
)";

// POST /programs of the program in `dir`: {status, error}.
std::pair<int, std::string> post_program(const LocalCluster& c, const std::string& dir) {
  auto bundle = read_program_dir(dir);
  if (!bundle.ok()) return {-1, bundle.status().message()};
  auto r = c.post("/programs", bundle->to_json().dump());
  if (!r.ok()) return {-1, r.status().message()};
  json j = json::parse(r->body, nullptr, false);
  return {r->status, j.is_object() ? j.value("error", r->body) : r->body};
}

// A run of examples/sum over two rows gives their sums.
void expect_sum_runs(const LocalCluster& c, const std::string& hash) {
  auto run = c.post(
      "/runtime/" + hash + "?wait=1",
      json{{"params", {{"dims", 1}}}, {"dataset", {{"values", {{"values", {1, 2}}}}}}}.dump());
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(json::parse(run->body)["result"]["aggregate"]["sums"][0], 3.0) << run->body;
}

TEST(CompileDeadlines, AnIncludeOutsideTheProgramIsRefusedWithoutEchoingIt) {
  TempDir data, programs;
  const std::string secret = data.path() + "/secret.txt";
  std::ofstream(secret) << "the-secret-first-line\nthe-secret-second-line\n";
  const std::string fifo = data.path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  LocalCluster c;
  Status st = c.start(1, {}, {"--data-root", data.path(), "--compile-timeout", "5"});
  ASSERT_TRUE(st.ok()) << st.message();

  const auto t0 = Clock::now();
  auto [status, error] =
      post_program(c, write_program(programs, "absolute", "#include \"" + secret + "\"\n"));
  EXPECT_EQ(status, 422) << error;
  EXPECT_NE(error.find("kernel.cu:1: #include \"" + secret + "\" is not allowed"),
            std::string::npos)
      << error;
  EXPECT_EQ(error.find("the-secret"), std::string::npos) << error;

  std::tie(status, error) =
      post_program(c, write_program(programs, "climbing", "\n#include \"../../secret.txt\"\n"));
  EXPECT_EQ(status, 422) << error;
  EXPECT_NE(error.find("kernel.cu:2: #include \"../../secret.txt\""), std::string::npos) << error;

  // A FIFO, in host.cpp: refused before any compiler opens it.
  std::tie(status, error) = post_program(
      c, write_program(programs, "fifo", "", "#include \"" + fifo + "\"\n" + kPlainHost));
  EXPECT_EQ(status, 422) << error;
  EXPECT_NE(error.find("host.cpp:1: #include \"" + fifo + "\""), std::string::npos) << error;
  EXPECT_LT(Clock::now() - t0, 10s);

  // load_program says the same and quotes nothing either.
  CommandResult loaded = c.load_program(programs.path() + "/absolute");
  EXPECT_NE(loaded.exit_code, 0);
  EXPECT_NE(loaded.output.find("is not allowed"), std::string::npos) << loaded.output;
  EXPECT_EQ(loaded.output.find("the-secret"), std::string::npos) << loaded.output;

  const std::string sum = register_program(c, LIZARD_SOURCE_DIR "/examples/sum");
  ASSERT_FALSE(sum.empty());
  expect_sum_runs(c, sum);
}

// A source that has its assembler read a file (`.incbin`, which no #include
// names) compiles in a compiler host that reads only the system and its
// build: a host.cpp on the server and a kernel.cu on a CPU worker (as
// `__asm__`, which the CPU backend does not take for PTX) fail to
// compile, and neither answer holds a byte of the file.
TEST(CompileDeadlines, AnAssemblerReadOfAFileOutsideFailsTheCompileWithoutItsBytes) {
  if (sandbox_disabled() || landlock_abi() == 0) GTEST_SKIP() << "no Landlock here";
  TempDir data, programs;
  const std::string secret = data.path() + "/token";
  std::ofstream(secret) << "the-secret-token\n";
  LocalCluster c;
  Status st = c.start(1, {"--backend", "cpu"});
  ASSERT_TRUE(st.ok()) << st.message();
  const std::string incbin =
      "__asm__(\".section .rodata\\n.incbin \\\"" + secret + "\\\"\\n.previous\");\n";
  auto [status, error] =
      post_program(c, write_program(programs, "hook-reads", "", incbin + kPlainHost));
  EXPECT_EQ(status, 422) << error;
  EXPECT_NE(error.find("file not found"), std::string::npos) << error;
  EXPECT_EQ(error.find("the-secret"), std::string::npos) << error;

  std::tie(status, error) = post_program(
      c,
      write_program(programs, "kernel-reads", "#ifdef LIZARD_CPU_BACKEND\n" + incbin + "#endif\n"));
  EXPECT_EQ(status, 422) << error;
  EXPECT_NE(error.find("file not found"), std::string::npos) << error;
  EXPECT_EQ(error.find("the-secret"), std::string::npos) << error;

  const std::string sum = register_program(c, LIZARD_SOURCE_DIR "/examples/sum");
  ASSERT_FALSE(sum.empty());
  expect_sum_runs(c, sum);
}

// A host.cpp whose compile does not end for minutes (constant evaluation of
// about 10^10 steps; an include of a FIFO once did the same, but a compile
// now reads nothing outside the system and its build): its compile is killed
// at the deadline, and the build slots it held serve the next registration.
const char* kEndlessCompile = R"(constexpr long spin() {
  long x = 0;
  for (long i = 0; i < 200000; ++i)
    for (long j = 0; j < 200000; ++j) x += i ^ j;
  return x;
}
static_assert(spin() != 1, "never decided within the deadline");
)";

TEST(CompileDeadlines, ACompileThatNeverEndsFailsAtTheDeadlineAndFreesItsSlot) {
  TempDir programs;
  LocalCluster c;
  Status st = c.start(1, {"--compile-timeout", "5"}, {"--compile-timeout", "2"});
  ASSERT_TRUE(st.ok()) << st.message();

  // Two at once: both of the server's build slots.
  const auto t0 = Clock::now();
  std::vector<std::future<std::pair<int, std::string>>> stuck;
  for (const char* name : {"stuck-a", "stuck-b"}) {
    const std::string dir =
        write_program(programs, name, "", std::string(kEndlessCompile) + kPlainHost);
    stuck.push_back(std::async(std::launch::async, [&c, dir] { return post_program(c, dir); }));
  }
  for (auto& f : stuck) {
    auto [status, error] = f.get();
    EXPECT_EQ(status, 422) << error;
    EXPECT_NE(error.find("compile timed out after 2 s"), std::string::npos) << error;
  }
  EXPECT_LT(Clock::now() - t0, 20s);

  auto [status, error] = post_program(c, write_program(programs, "plain", "", kPlainHost));
  EXPECT_EQ(status, 201) << error;
  EXPECT_LT(Clock::now() - t0, 40s);
}

// Both build slots held by host.cpp files whose static initialisers never
// return (each bounded by --hook-timeout): a third registration is answered
// 503 at the compile time-out, not when a slot frees.
TEST(CompileDeadlines, ARegistrationThatWaitsPastItsDeadlineForASlotIs503) {
  TempDir programs;
  LocalCluster c;
  Status st =
      c.start(1, {"--hook-timeout", "5"}, {"--compile-timeout", "2", "--hook-timeout", "12"});
  ASSERT_TRUE(st.ok()) << st.message();
  std::vector<std::future<std::pair<int, std::string>>> holding;
  for (const char* name : {"spin-a", "spin-b"}) {
    const std::string dir = write_program(programs, name, "", kSpinningHost);
    holding.push_back(std::async(std::launch::async, [&c, dir] { return post_program(c, dir); }));
  }
  std::this_thread::sleep_for(500ms);
  const auto t0 = Clock::now();
  auto [status, error] = post_program(c, write_program(programs, "waiting", "", kPlainHost));
  const auto waited = Clock::now() - t0;
  EXPECT_EQ(status, 503) << error;
  EXPECT_NE(error.find("waited 2 s (--compile-timeout) for a build slot"), std::string::npos)
      << error;
  EXPECT_LT(waited, 8s);
  for (auto& f : holding) EXPECT_EQ(f.get().first, 422);
  // The slots are free again.
  std::tie(status, error) = post_program(c, programs.path() + "/waiting");
  EXPECT_EQ(status, 201) << error;
}

// A kernel.cu whose static initialiser never returns, on the CPU backend:
// loading its library in the executor process is bounded like its compile;
// the build fails saying so, the executor process is replaced, and another
// program registered meanwhile builds and runs on the same worker.
TEST(CompileDeadlines, AKernelStaticInitialiserThatNeverReturnsFailsItsBuild) {
  TempDir programs;
  LocalCluster c;
  Status st = c.start(1, {"--backend", "cpu", "--compile-timeout", "8"});
  ASSERT_TRUE(st.ok()) << st.message();
  const std::string spinning =
      write_program(programs, "spinning-kernel",
                    "static int spin() { for (volatile long i = 0;; i = i + 1) {} return 0; }\n"
                    "static int never = spin();\n");
  auto failed = std::async(std::launch::async, [&] { return post_program(c, spinning); });
  std::this_thread::sleep_for(200ms);
  const std::string kmeans = register_program(c, LIZARD_SOURCE_DIR "/examples/kmeans");
  EXPECT_FALSE(kmeans.empty());
  auto [status, error] = failed.get();
  EXPECT_EQ(status, 422) << error;
  EXPECT_NE(error.find("kernel.cu: the program's static initialisation did not finish within 8 s"),
            std::string::npos)
      << error;
  const std::string sum = register_program(c, LIZARD_SOURCE_DIR "/examples/sum");
  ASSERT_FALSE(sum.empty());
  expect_sum_runs(c, sum);
}

// The server takes the registration and does not answer in time (a host.cpp
// whose static initialiser spins, under a long --hook-timeout):
// load_program leaves at its --timeout with a non-zero exit.
TEST(CompileDeadlines, LoadProgramGivesUpAtItsTimeout) {
  TempDir programs;
  LocalCluster c;
  Status st = c.start(1, {}, {"--hook-timeout", "60"});
  ASSERT_TRUE(st.ok()) << st.message();
  const std::string dir = write_program(programs, "slow", "", kSpinningHost);
  const auto t0 = Clock::now();
  auto r = run_command({load_program_binary(), dir, c.uri(), "--timeout", "3"}, "", 30000);
  const auto took = Clock::now() - t0;
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->timed_out) << r->output;
  EXPECT_NE(r->exit_code, 0) << r->output;
  EXPECT_NE(r->output.find("no answer from 127.0.0.1:" + std::to_string(c.port()) + " within 3 s"),
            std::string::npos)
      << r->output;
  EXPECT_GE(took, 2500ms);
  EXPECT_LT(took, 10s);
}

}  // namespace
}  // namespace lizard
