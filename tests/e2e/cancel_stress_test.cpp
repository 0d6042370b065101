// Cancels at random moments, with real processes: a run that holds both
// executors of a worker and a run queued behind it are cancelled within a
// few milliseconds of each other (in either order), while the second is
// loading uploaded rows, compiling a new variant of its kernels, or
// iterating; after each trial, a run over both executors must be served at
// once with the right answer — no cancel may leave an executor marked busy
// for a run the server has forgotten.
//
// Bound: kTrials trials (LIZARD_CANCEL_TRIALS), and no trial starts after
// kBudget; seed kSeed (LIZARD_CANCEL_SEED).  A failure names the seed and
// the trial, to run it again.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "dataset/npy.h"
#include "local_cluster.h"
#include "net/http_client.h"

namespace lizard {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kTrials = 30;
constexpr auto kBudget = std::chrono::seconds(60);
constexpr uint64_t kSeed = 45;
constexpr int64_t kUploadRows = 4'000'000;  // 64 MB of float64 pairs: 64 chunks

int64_t env_or(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoll(v) : fallback;
}

enum class Phase { kLoading, kCompiling, kIterating };
const char* phase_name(Phase p) {
  return p == Phase::kLoading ? "loading" : p == Phase::kCompiling ? "compiling" : "iterating";
}

class CancelStress : public ::testing::Test {
 protected:
  void SetUp() override {
    // One worker of two executors, as a node with two GPUs; no upload cache,
    // so that every run over the upload streams its rows.
    ASSERT_TRUE(
        c_.start(1, {"--cpu-executors", "2", "--cpu-threads", "1", "--upload-cache-mb", "0"}).ok());
    ASSERT_EQ(executor_count(c_), 2u);
    kmeans_ = register_program(c_, LIZARD_SOURCE_DIR "/examples/kmeans");
    sum_ = register_program(c_, LIZARD_SOURCE_DIR "/examples/sum");
    ASSERT_FALSE(kmeans_.empty());
    ASSERT_FALSE(sum_.empty());
    std::vector<double> values(static_cast<size_t>(kUploadRows) * 2, 1.0);
    const std::string path = c_.dir() + "/ones.npy";
    std::ofstream(path, std::ios::binary)
        << npy_bytes(DType::kFloat64, {kUploadRows, 2}, values.data());
    auto up = http_upload_file("POST", c_.uri() + "/datasets", path);
    ASSERT_TRUE(up.ok()) << up.status().message();
    ASSERT_EQ(up->status, 201) << up->body;
    upload_ = json::parse(up->body)["id"];
  }

  // k-means over generated blobs on both executors; `k` picks the variant.
  json kmeans_body(int k, int iterations) const {
    std::vector<std::vector<float>> init;
    for (int q = 0; q < k; ++q) init.push_back({float(q * 3), float(q * 3 + 1)});
    return {{"params", {{"k", k}, {"dims", 2}, {"max_iterations", iterations}, {"threshold", -1}}},
            {"dataset", {{"points", {{"generate", "blobs"}, {"seed", 1}, {"rows", 200000}}}}},
            {"state", {{"centroids", init}}},
            {"executors", 2}};
  }

  // The run queued behind the first, busy with `phase` when it is cancelled.
  json second_body(Phase phase, int trial) const {
    switch (phase) {
      case Phase::kLoading:
        return {{"params", {{"dims", 2}}},
                {"dataset", {{"values", {{"upload", upload_}}}}},
                {"executors", 2}};
      case Phase::kCompiling:  // a k no earlier run used: its kernels are compiled
        return kmeans_body(3 + trial, 2);
      case Phase::kIterating:
        return kmeans_body(2, 100000);
    }
    return {};
  }

  void wait_until_running(const std::string& id) {
    for (int i = 0; i < 2000; ++i) {
      const std::string status = get_json(c_, "/runtimes/" + id).value("status", "");
      if (status != "queued") return;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  void cancel(const std::string& id) {
    (void)http_request("DELETE", c_.uri() + "/runtimes/" + id, "", "", 30);
  }

  // Both executors serve a run at once, with the right answer.
  void expect_executors_serve(const std::string& where) {
    const json body = {{"params", {{"dims", 2}}},
                       {"dataset", {{"values", {{"values", {{1, 2}, {3, 4}, {5, 6}, {7, 8}}}}}}},
                       {"executors", 2}};
    const std::string id = submit_run(c_, sum_, body);
    ASSERT_FALSE(id.empty()) << where;
    const json rec = wait_until_finished(c_, id, 20);
    ASSERT_EQ(rec.value("status", ""), "done") << where << ": " << rec.dump();
    EXPECT_EQ(rec["result"]["aggregate"]["sums"], json({16.0, 20.0})) << where;
    EXPECT_EQ(rec["plan"]["executors"].size(), 2u) << where << ": " << rec.dump();
  }

  LocalCluster c_;
  std::string kmeans_, sum_, upload_;
};

TEST_F(CancelStress, EveryExecutorServesTheNextRunAfterCancelsAtRandomMoments) {
  const uint64_t seed = static_cast<uint64_t>(env_or("LIZARD_CANCEL_SEED", kSeed));
  const int trials = static_cast<int>(env_or("LIZARD_CANCEL_TRIALS", kTrials));
  std::mt19937_64 rng(seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const auto t0 = Clock::now();
  int done = 0;
  for (int trial = 0; trial < trials && Clock::now() - t0 < kBudget; ++trial, ++done) {
    const Phase phase = static_cast<Phase>(trial % 3);
    const std::string where = "seed " + std::to_string(seed) + ", trial " + std::to_string(trial) +
                              " (" + phase_name(phase) + ")";
    const std::string first = submit_run(c_, kmeans_, kmeans_body(2, 100000));
    ASSERT_FALSE(first.empty()) << where;
    wait_until_running(first);
    const std::string second =
        submit_run(c_, phase == Phase::kLoading ? sum_ : kmeans_, second_body(phase, trial));
    ASSERT_FALSE(second.empty()) << where;
    std::this_thread::sleep_for(std::chrono::milliseconds(uniform(0, 300)));
    if (trial % 2 == 0) {
      // Both within ~3 ms, in either order.
      const bool second_first = uniform(0, 3) == 0;
      cancel(second_first ? second : first);
      std::this_thread::sleep_for(std::chrono::milliseconds(uniform(0, 3)));
      cancel(second_first ? first : second);
    } else {
      // The second once it has begun (its rows on their way, its kernels
      // compiling, or its iterations under way), at a moment of its phase.
      cancel(first);
      wait_until_running(second);
      const int within_ms = phase == Phase::kLoading ? 60 : phase == Phase::kCompiling ? 600 : 300;
      std::this_thread::sleep_for(std::chrono::milliseconds(uniform(0, within_ms)));
      cancel(second);
    }
    for (const auto& id : {first, second}) {
      const json rec = wait_until_finished(c_, id, 30);
      const std::string status = rec.value("status", "");
      ASSERT_TRUE(status == "cancelled" || status == "done" || status == "failed")
          << where << ": " << rec.dump();
    }
    ASSERT_NO_FATAL_FAILURE(expect_executors_serve(where));
  }
  std::printf("cancel stress: %d trial(s) with seed %llu in %.1f s\n", done,
              static_cast<unsigned long long>(seed),
              std::chrono::duration<double>(Clock::now() - t0).count());
  EXPECT_GE(done, 3) << "too few trials within the time bound to cover every phase";
}

}  // namespace
}  // namespace lizard
