// Host hooks in their hook processes, with real processes: a hook that
// segfaults, aborts, exits or never returns fails its own run with a message
// that says so, while the server keeps answering and a run of another
// program beside it ends with the answer it gives alone; a cancel ends a
// hook that is running; a host.cpp whose static initialiser aborts is
// refused at registration.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "dataset/test_files.h"
#include "json_compare.h"
#include "local_cluster.h"
#include "net/http_client.h"
#include "program/bundle.h"

namespace lizard {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kHookTimeoutS = 3;

// Column sums (examples/sum's kernel) with a state and a hook that, at
// iteration 1, does what the `fault` param says: 1 a null dereference,
// 2 abort(), 3 exit(0), 4 an endless loop.
const char* kFaultsConfig = R"(info: {name: Hook faults, version: "1.0"}
sources: {cuda: kernel.cu, host: host.cpp}
params:
  dims:  {type: int32}
  fault: {type: int32, default: 0}
dataset:
  values: {type: float64, shape: [rows, dims]}
state:
  total: {type: float64}
aggregate:
  sums:  {type: float64, shape: [dims], reduce: sum}
  count: {type: int64, reduce: sum}
iterate:
  - kernel: column_sums
)";

const char* kFaultsHost = R"(#include <stdlib.h>
#include "lizard_program.h"
extern "C" int update_global_state(const global_params_t* p, const agg_res_t* r,
                                   global_state_t* s, int64_t iteration) {
  if (iteration == 1) {
    if (p->fault == 1) { volatile int* nowhere = 0; *nowhere = 1; }
    if (p->fault == 2) abort();
    if (p->fault == 3) exit(0);
    if (p->fault == 4) for (volatile long spin = 0;; spin = spin + 1) {}
  }
  s->total += (double)*r->count;
  return 0;
}
)";

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Writes a program directory of the faults config, examples/sum's kernel and `host`.
std::string write_program(const TempDir& dir, const std::string& name, const std::string& host) {
  const std::string path = dir.path(name);
  std::filesystem::create_directories(path);
  std::ofstream(path + "/config.yaml") << kFaultsConfig;
  std::ofstream(path + "/kernel.cu") << read_file(LIZARD_SOURCE_DIR "/examples/sum/kernel.cu");
  std::ofstream(path + "/host.cpp") << host;
  return path;
}

class HookFaults : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new LocalCluster();
    Status st = cluster_->start(2, {"--cpu-threads", "1"},
                                {"--hook-timeout-s", std::to_string(kHookTimeoutS)});
    ASSERT_TRUE(st.ok()) << st.message();
    programs_ = new TempDir();
    faults_ = register_program(*cluster_, write_program(*programs_, "faults", kFaultsHost));
    kmeans_ = register_program(*cluster_, LIZARD_SOURCE_DIR "/examples/kmeans");
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete programs_;
    cluster_ = nullptr;
    programs_ = nullptr;
  }
  void SetUp() override {
    ASSERT_FALSE(faults_.empty());
    ASSERT_FALSE(kmeans_.empty());
  }
  void TearDown() override { expect_server_up(); }

  static void expect_server_up() {
    EXPECT_TRUE(cluster_->server_alive()) << "the server died";
    auto clients = cluster_->get("/clients");
    ASSERT_TRUE(clients.ok()) << clients.status().message();
    EXPECT_EQ(clients->status, 200);
    EXPECT_EQ(json::parse(clients->body, nullptr, false).size(), 2u) << clients->body;
  }

  static json faults_body(int fault) {
    return {{"params", {{"dims", 2}, {"fault", fault}}},
            {"dataset", {{"values", {{"values", {{1.5, 2.5}, {3.0, 4.0}}}}}}},
            {"max_iterations", 3},
            {"executors", 1}};
  }
  // k-means on generated blobs, all `iterations`, on one executor.
  static json kmeans_body(int iterations) {
    std::vector<float> init;
    for (int q = 0; q < 4; ++q)
      for (int j = 0; j < 2; ++j) init.push_back(static_cast<float>(q * 3 + j));
    return {{"params", {{"k", 4}, {"dims", 2}, {"max_iterations", iterations}, {"threshold", -1}}},
            {"dataset", {{"points", {{"generate", "blobs"}, {"seed", 5}, {"rows", 50000}}}}},
            {"state", {{"centroids", init}}},
            {"executors", 1}};
  }

  static inline LocalCluster* cluster_ = nullptr;
  static inline TempDir* programs_ = nullptr;
  static inline std::string faults_, kmeans_;
};

TEST_F(HookFaults, AHookWithoutFaultsRunsToTheEnd) {
  json r = wait_until_finished(*cluster_, submit_run(*cluster_, faults_, faults_body(0)), 60);
  ASSERT_EQ(r["status"], "done") << r.dump(2);
  EXPECT_EQ(r["result"]["state"]["total"], 3 * 2.0);
  EXPECT_EQ(r["result"]["aggregate"]["sums"], json({4.5, 6.5}));
}

TEST_F(HookFaults, EachFaultFailsOnlyItsRun) {
  // A k-means run (its own hook process) holds one executor meanwhile.
  const std::string beside = submit_run(*cluster_, kmeans_, kmeans_body(400));
  ASSERT_FALSE(beside.empty());
  const std::string prefix = "host hook update_global_state (iteration 1) ";
  const std::vector<std::pair<int, std::string>> faults = {
      {1, "ended the hook process: killed by signal 11 (SIGSEGV, a segmentation fault)"},
      {2, "ended the hook process: killed by signal 6 (SIGABRT, abort())"},
      {3, "ended the hook process: exited with status 0"},
      {4, "did not finish within " + std::to_string(kHookTimeoutS) +
              " s (--hook-timeout); the hook process was killed"}};
  bool beside_ran_meanwhile = false;
  for (const auto& [fault, ending] : faults) {
    const auto t0 = Clock::now();
    json r = wait_until_finished(*cluster_, submit_run(*cluster_, faults_, faults_body(fault)), 60);
    EXPECT_EQ(r["status"], "failed") << r.dump(2);
    // The server's message, or the same from the worker that drove the run
    // ("iteration 1: worker w2: host hook ...").
    const std::string error = r.value("error", "");
    EXPECT_TRUE(error.size() >= (prefix + ending).size() &&
                error.compare(error.size() - (prefix + ending).size(), std::string::npos,
                              prefix + ending) == 0)
        << "fault " << fault << ": " << error;
    EXPECT_EQ(r["iterations"], 1);
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(kHookTimeoutS + 20));
    expect_server_up();
    beside_ran_meanwhile =
        beside_ran_meanwhile || get_json(*cluster_, "/runtimes/" + beside)["status"] == "running";
  }
  json done = wait_until_finished(*cluster_, beside, 300);
  ASSERT_EQ(done["status"], "done") << done.dump(2);
  EXPECT_EQ(done["iterations"], 400);
  EXPECT_TRUE(beside_ran_meanwhile) << "the k-means run ended before the faulty runs";
  // The answer it gives alone.
  json alone =
      wait_until_finished(*cluster_, submit_run(*cluster_, kmeans_, kmeans_body(400)), 300);
  ASSERT_EQ(alone["status"], "done") << alone.dump(2);
  expect_numbers_close(done["result"], alone["result"], 1e-5, "k-means");
}

TEST_F(HookFaults, ACancelEndsAHookThatNeverReturns) {
  const std::string id = submit_run(*cluster_, faults_, faults_body(4));
  ASSERT_FALSE(id.empty());
  // The record shows one iteration once the hook of iteration 0 returned;
  // the hook of iteration 1 spins from a few milliseconds later.
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (get_json(*cluster_, "/runtimes/" + id).value("iterations", 0) < 1 &&
         Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(get_json(*cluster_, "/runtimes/" + id)["status"], "running");
  const auto t0 = Clock::now();
  auto cancel = http_request("DELETE", cluster_->uri() + "/runtimes/" + id, "", "", 30);
  ASSERT_TRUE(cancel.ok());
  EXPECT_EQ(cancel->status, 202) << cancel->body;
  json r;
  while (Clock::now() - t0 < std::chrono::seconds(10)) {
    r = get_json(*cluster_, "/runtimes/" + id);
    if (r["status"] != "running") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(r["status"], "cancelled") << r.dump(2);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(2));
}

TEST_F(HookFaults, AStaticInitialiserThatAbortsFailsTheRegistration) {
  const std::string dir = write_program(
      *programs_, "static-abort",
      std::string("#include <stdlib.h>\nstatic int crash = (abort(), 0);\n") + kFaultsHost);
  auto bundle = read_program_dir(dir);
  ASSERT_TRUE(bundle.ok()) << bundle.status().message();
  auto r = cluster_->post("/programs", bundle->to_json().dump());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, 422) << r->body;
  EXPECT_EQ(json::parse(r->body, nullptr, false).value("error", ""),
            "host.cpp does not load on the server: loading host.cpp (its static initialisers) "
            "ended the hook process: killed by signal 6 (SIGABRT, abort())")
      << r->body;
  // The workers built its kernels meanwhile; the server keeps no build of a
  // program it refused: each worker lists the registered programs only.
  const size_t registered = get_json(*cluster_, "/programs").size();
  for (const json& w : get_json(*cluster_, "/clients"))
    EXPECT_EQ(w["programs"].size(), registered) << w.dump(2);
  // load_program shows the same message.
  CommandResult loaded = cluster_->load_program(dir);
  EXPECT_NE(loaded.exit_code, 0);
  EXPECT_NE(loaded.output.find("killed by signal 6 (SIGABRT, abort())"), std::string::npos)
      << loaded.output;
  expect_server_up();
  // The server still registers and runs programs.
  json ok = wait_until_finished(*cluster_, submit_run(*cluster_, faults_, faults_body(0)), 60);
  EXPECT_EQ(ok["status"], "done") << ok.dump(2);
}

}  // namespace
}  // namespace lizard
