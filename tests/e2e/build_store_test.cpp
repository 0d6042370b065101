// Builds made once per cluster: a value one worker compiled is fetched by
// another, which compiles nothing; a build changed on the server's disk is
// refused by the worker that fetches it and compiled again; a worker with
// another compiler is not served another's build; deleting a program
// removes its builds from the server.
#include <gtest/gtest.h>
#include <signal.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/sha256.h"
#include "fake_worker.h"
#include "json_compare.h"
#include "local_cluster.h"
#include "net/http_client.h"

namespace lizard {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

json kmeans_body(int k) {
  std::vector<float> init;
  for (int q = 0; q < k; ++q)
    for (int j = 0; j < 2; ++j) init.push_back(static_cast<float>(q * 3 + j));
  return {{"params", {{"k", k}, {"dims", 2}, {"max_iterations", 5}, {"threshold", -1}}},
          {"dataset", {{"points", {{"generate", "blobs"}, {"seed", 7}, {"rows", 5000}}}}},
          {"state", {{"centroids", init}}}};
}

class BuildStore : public ::testing::Test {
 protected:
  // Its workers run the CPU backend on any machine: the figures below (one
  // build per value, named "cpu") are a CPU worker's; a GPU worker offers a
  // first-tier build beside each optimised one.
  void SetUp() override {
    if (const char* b = std::getenv("LIZARD_E2E_BACKEND")) backend_ = b;
    ::setenv("LIZARD_E2E_BACKEND", "cpu", 1);
  }
  void TearDown() override {
    if (backend_.empty())
      ::unsetenv("LIZARD_E2E_BACKEND");
    else
      ::setenv("LIZARD_E2E_BACKEND", backend_.c_str(), 1);
  }
  void start() {
    ASSERT_TRUE(c_.start(1).ok());
    kmeans_ = register_program(c_, LIZARD_SOURCE_DIR "/examples/kmeans");
    ASSERT_FALSE(kmeans_.empty());
  }
  fs::path builds_dir() const { return fs::path(c_.dir()) / "server" / "builds" / kmeans_; }
  size_t builds_kept() const {
    size_t n = 0;
    std::error_code ec;
    for (const auto& f : fs::directory_iterator(builds_dir(), ec))
      if (f.path().extension() == ".build") ++n;
    return n;
  }
  // Waits (10 s at most) until the server keeps `n` builds of the program.
  bool wait_for_builds(size_t n) const {
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (builds_kept() < n && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return builds_kept() >= n;
  }
  // Runs `k` to its end.
  json run(int k) {
    json rec = wait_until_finished(c_, submit_run(c_, kmeans_, kmeans_body(k)), 180);
    EXPECT_EQ(rec.value("status", ""), "done") << rec.dump(2);
    return rec;
  }
  // A second worker joins (`env` set for it alone) and the first leaves.
  void hand_over(const char* env_name = nullptr, const char* env_value = nullptr) {
    if (env_name) ::setenv(env_name, env_value, 1);
    Status added = c_.add_worker();
    if (env_name) ::unsetenv(env_name);
    ASSERT_TRUE(added.ok());
    ASSERT_TRUE(c_.wait_for_workers(2, 120).ok());
    c_.kill_worker(0, SIGKILL);
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    while (get_json(c_, "/clients").size() != 1 && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_EQ(get_json(c_, "/clients").size(), 1u);
  }
  std::string second_worker_log() const { return read_file(c_.dir() + "/worker1.log"); }

  LocalCluster c_;
  std::string kmeans_, backend_;
};

// Worker 1 compiles k=5 and offers it (and the registered build); worker 2
// joins, fetches the registered build instead of compiling it, then runs
// k=5 with the build worker 1 made: no compile, the same answer.
TEST_F(BuildStore, AValueOneWorkerBuiltIsFetchedByAnother) {
  start();
  const json first = run(5);
  EXPECT_FALSE(first["phases"].value("compile_cache_hit", true)) << first["phases"].dump();
  ASSERT_TRUE(wait_for_builds(2)) << "the server keeps " << builds_kept() << " builds";
  hand_over();
  const json second = run(5);
  EXPECT_TRUE(second["phases"].value("compile_cache_hit", false)) << second["phases"].dump();
  EXPECT_LE(second["phases"].value("compile_ms", -1.0), 5.0) << second["phases"].dump();
  EXPECT_GE(second["phases"].value("compile_ms", -1.0), 0.0);
  expect_numbers_close(second["result"]["state"], first["result"]["state"], 1e-5, "k=5");
  const std::string log = second_worker_log();
  EXPECT_NE(log.find("fetched the optimised cpu build of K-Means dims=2,k=2,tf32=0"),
            std::string::npos)
      << "the joining worker compiled the registered build\n"
      << log;
  EXPECT_NE(log.find("fetched the optimised cpu build of K-Means dims=2,k=5,tf32=0"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("offered the"), std::string::npos) << "it compiled something\n" << log;
}

// Every build file on the server gets a byte flipped: the joining worker
// refuses both builds, compiles them itself, and the run is still right.
TEST_F(BuildStore, ABuildChangedOnTheServerIsRefusedAndCompiled) {
  start();
  const json first = run(6);
  ASSERT_TRUE(wait_for_builds(2));
  for (const auto& f : fs::directory_iterator(builds_dir())) {
    std::fstream file(f.path(), std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(static_cast<std::streamoff>(fs::file_size(f.path()) / 2));
    const char c = static_cast<char>(file.get());
    file.seekp(static_cast<std::streamoff>(fs::file_size(f.path()) / 2));
    file.put(static_cast<char>(c ^ 0x5a));
  }
  hand_over();
  const json second = run(6);
  EXPECT_FALSE(second["phases"].value("compile_cache_hit", true)) << second["phases"].dump();
  expect_numbers_close(second["result"]["state"], first["result"]["state"], 1e-5, "k=6");
  const std::string log = second_worker_log();
  EXPECT_NE(log.find("refused the optimised cpu build"), std::string::npos) << log;
  EXPECT_EQ(log.find("fetched the optimised cpu build"), std::string::npos) << log;
}

// A worker whose compiler is named otherwise (CXX=g++ against c++) has
// another toolchain: the server hands it none of the other's builds.
TEST_F(BuildStore, AWorkerOfAnotherCompilerIsNotServed) {
  start();
  run(7);
  ASSERT_TRUE(wait_for_builds(2));
  hand_over("CXX", "g++");
  const json second = run(7);
  EXPECT_FALSE(second["phases"].value("compile_cache_hit", true)) << second["phases"].dump();
  const std::string log = second_worker_log();
  EXPECT_EQ(log.find("fetched the"), std::string::npos) << log;
  EXPECT_NE(log.find("offered the optimised cpu build of K-Means dims=2,k=7,tf32=0"),
            std::string::npos)
      << log;
  EXPECT_TRUE(wait_for_builds(4));  // its own, kept beside the first worker's
}

TEST_F(BuildStore, DeletingTheProgramRemovesItsBuilds) {
  start();
  ASSERT_TRUE(wait_for_builds(1));  // the registered build
  auto del = http_request("DELETE", c_.uri() + "/programs/" + kmeans_, "", "", 30);
  ASSERT_TRUE(del.ok());
  ASSERT_EQ(del->status, 200) << del->body;
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (fs::exists(builds_dir()) && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(fs::exists(builds_dir()));
}

// A worker that reported no toolchain offers builds: a malformed header,
// bytes that are not what the header says, another program's hash.  Each
// is refused with its reason in the server's log; its fetch is answered
// "none"; the server keeps only what the real worker offered, and stays up.
TEST_F(BuildStore, BadOffersAreRefusedAndTheServerStaysUp) {
  start();
  ASSERT_TRUE(wait_for_builds(1));
  std::atomic<int> answered_none{0};
  FakeWorker fake(c_.port(), "odd-node", {fake_cpu()}, [&](FakeWorker&, const Message& m) {
    if (m.type == MessageType::kBuildFetched && !m.header.value("found", true)) ++answered_none;
  });
  ASSERT_TRUE(c_.wait_for_workers(2).ok());
  const std::string bytes = "not a library";
  json offer = {{"hash", kmeans_},
                {"values", {{"k", 3}, {"dims", 2}, {"tf32", 0}}},
                {"arch", "cpu"},
                {"sha256", sha256_hex(bytes)},
                {"bytes", bytes.size()}};
  json no_digest = offer;
  no_digest.erase("sha256");
  fake.send(Message{MessageType::kBuildOffer, no_digest, bytes});
  fake.send(Message{MessageType::kBuildOffer, offer, bytes});
  json other = offer;
  other["hash"] = std::string(64, 'f');
  fake.send(Message{MessageType::kBuildOffer, other, bytes});
  fake.send(Message{MessageType::kBuildOffer, offer, std::string(1 << 20, 'x')});
  fake.send(MessageType::kBuildFetch, {{"request", 1}, {"hash", kmeans_}, {"arch", "cpu"}});
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (answered_none == 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(answered_none, 1);
  EXPECT_TRUE(c_.server_alive());
  EXPECT_EQ(get_json(c_, "/clients").size(), 2u);
  EXPECT_EQ(builds_kept(), 1u);
  const std::string log = read_file(c_.dir() + "/server.log");
  EXPECT_NE(log.find("sent a bad build_offer: build_offer: missing required field \"sha256\""),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("the worker reported no toolchain"), std::string::npos) << log;
}

}  // namespace
}  // namespace lizard
