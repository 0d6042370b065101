// Partitions between namespace hosts, made by setting a host's switch port
// down (its peers hear nothing: no FIN, no RST), with the liveness timeout at
// 5 s on both sides (--heartbeat-timeout on the server, --server-timeout on
// the workers):
// - a worker cut off for longer than that is dropped, the run re-plans over
//   the other and ends done with the exact counts, and the worker joins
//   again once its link is back;
// - a 2 s blip drops nobody: the run ends exactly as an undisturbed one;
// - the server cut off from every worker: the run waits (--worker-wait), its
//   record naming the lost workers and why, and ends done once the links are
//   back;
// - a worker that reaches the server but not the dataset file: the run fails
//   with an error naming the worker and the file; an upload serves both.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include "blobs.h"
#include "netns_cluster.h"

namespace lizard {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kLivenessS = 5, kIterations = 12;
const std::vector<std::string> kWorkerArgs = {"--server-timeout", std::to_string(kLivenessS)};
const std::vector<std::string> kServerArgs = {"--heartbeat-timeout", std::to_string(kLivenessS)};

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

class Partition : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!c_.available()) GTEST_SKIP() << "no network namespaces here: " << c_.why_unavailable();
  }

  // Starts the cluster with the short liveness timeout and registers k-means.
  void start(int workers, std::vector<std::string> server_args = kServerArgs) {
    ASSERT_TRUE(c_.start(workers, kWorkerArgs, server_args).ok());
    hash_ = c_.register_program(LIZARD_SOURCE_DIR "/examples/kmeans");
    ASSERT_FALSE(hash_.empty());
  }

  // Waits until GET /clients lists `n` workers; the seconds it took, or -1.
  double seconds_until_workers(int n, int timeout_s) {
    const auto t0 = Clock::now();
    while (seconds_since(t0) < timeout_s) {
      if (c_.worker_count() == n) return seconds_since(t0);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }

  // Done, all iterations, every point counted once, centroids at the blobs' centres.
  void expect_exact(const json& rec) {
    ASSERT_EQ(rec.value("status", ""), "done") << rec.dump(2);
    EXPECT_EQ(rec["iterations"], kIterations);
    EXPECT_EQ(rec["result"]["aggregate"]["counts"], blobs_.counts());
    const json& got = rec["result"]["state"]["centroids"];
    for (int q = 0; q < KmeansBlobs::kK; ++q)
      for (int j = 0; j < KmeansBlobs::kDims; ++j)
        EXPECT_NEAR(got[q][j].get<double>(), 10.0 * ((q >> j) & 1) + 3.0 * q, 0.01)
            << "centroid " << q << " dim " << j;
  }

  NetnsCluster c_;
  std::string hash_;
  KmeansBlobs blobs_{c_.dir() + "/data", 1000000};
};

TEST_F(Partition, AWorkerCutOffPastTheTimeoutIsDroppedAndJoinsAgain) {
  start(2);
  const json body = blobs_.request({{"path", blobs_.path}}, kIterations);
  const auto t_undisturbed = Clock::now();
  expect_exact(c_.wait_until_finished(c_.submit(hash_, body), 120));
  const double undisturbed_s = seconds_since(t_undisturbed);

  const auto t_submit = Clock::now();
  const std::string id = c_.submit(hash_, body);
  ASSERT_TRUE(c_.wait_for_iterations(id, 2));
  const auto t_cut = Clock::now();
  ASSERT_TRUE(c_.hosts().cut(c_.worker_host(1)).ok());
  const double detected_s = seconds_until_workers(1, 4 * kLivenessS);
  ASSERT_GT(detected_s, 0) << "the cut-off worker was never dropped";
  json rec = c_.wait_until_finished(id, 120);
  const double run_s = seconds_since(t_submit);
  expect_exact(rec);
  ASSERT_TRUE(rec.contains("recoveries")) << rec.dump(2);
  const std::string reason = rec["recoveries"][0].value("reason", "");
  EXPECT_NE(reason.find("missed heartbeat"), std::string::npos) << reason;
  EXPECT_EQ(rec["plan"]["executors"].size(), 1u);
  // Dropped after the timeout, not before; and not much after.
  EXPECT_GE(detected_s, kLivenessS - 0.5);
  EXPECT_LE(detected_s, kLivenessS + 3.0);
  EXPECT_LE(run_s, undisturbed_s + kLivenessS + 10.0);

  // The link stays down past the worker's own timeout, then comes back.
  std::this_thread::sleep_for(std::chrono::seconds(8) - (Clock::now() - t_cut));
  ASSERT_TRUE(c_.hosts().restore(c_.worker_host(1)).ok());
  const double rejoined_s = seconds_until_workers(2, 30);
  ASSERT_GT(rejoined_s, 0) << "the worker did not join again (logs in " << c_.dir() << ")";
  // A worker that joins builds the registered program in the background;
  // runs plan over it once its build is ready, not before.
  const auto t_joined = Clock::now();
  while (c_.workers_ready(hash_) != 2 && seconds_since(t_joined) < 60)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(c_.workers_ready(hash_), 2) << "the worker that came back never built the program";
  const double built_s = seconds_since(t_joined);
  std::fprintf(stderr,
               "liveness %d s: dropped %.1f s after the cut; run %.1f s against %.1f s "
               "undisturbed; joined again %.1f s after the link came back, its build ready "
               "%.2f s later\n",
               kLivenessS, detected_s, run_s, undisturbed_s, rejoined_s, built_s);
  json again = c_.wait_until_finished(c_.submit(hash_, body), 120);
  expect_exact(again);
  EXPECT_EQ(again["plan"]["executors"].size(), 2u) << "the worker that came back serves runs";
}

TEST_F(Partition, ABlipShorterThanTheTimeoutChangesNothing) {
  start(2);
  const json body = blobs_.request({{"path", blobs_.path}}, kIterations);
  json undisturbed = c_.wait_until_finished(c_.submit(hash_, body), 120);
  expect_exact(undisturbed);

  const std::string id = c_.submit(hash_, body);
  ASSERT_TRUE(c_.wait_for_iterations(id, 2));
  const auto t_cut = Clock::now();
  ASSERT_TRUE(c_.hosts().cut(c_.worker_host(1)).ok());
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ASSERT_TRUE(c_.hosts().restore(c_.worker_host(1)).ok());
  json rec = c_.wait_until_finished(id, 120);
  std::fprintf(stderr, "a 2 s blip: the run ended %.1f s after the cut\n", seconds_since(t_cut));
  expect_exact(rec);
  // Nobody was dropped, nothing was counted twice: the same plan and the
  // same answer, bit for bit.
  EXPECT_FALSE(rec.contains("recoveries")) << rec["recoveries"].dump(2);
  EXPECT_EQ(rec["plan"], undisturbed["plan"]);
  EXPECT_EQ(rec["result"], undisturbed["result"]);
  EXPECT_EQ(c_.worker_count(), 2);
}

TEST_F(Partition, TheServerCutOffFromEveryWorkerWaitsThenRecovers) {
  start(2, {"--heartbeat-timeout", std::to_string(kLivenessS), "--worker-wait", "60"});
  const json body = blobs_.request({{"path", blobs_.path}}, kIterations);
  const std::string id = c_.submit(hash_, body);
  ASSERT_TRUE(c_.wait_for_iterations(id, 2));
  for (int w = 0; w < 2; ++w) ASSERT_TRUE(c_.hosts().cut(c_.worker_host(w)).ok());
  ASSERT_GT(seconds_until_workers(0, 4 * kLivenessS), 0) << "the workers were never dropped";
  // The run waits for workers (--worker-wait), and its record says why.
  json waiting = c_.get_json("/runtimes/" + id);
  EXPECT_EQ(waiting.value("status", ""), "running") << waiting.dump(2);
  std::string reasons;
  for (const auto& r : waiting.value("recoveries", json::array()))
    reasons += r.value("reason", "") + "\n";
  for (const char* w : {"lost worker w1", "lost worker w2", "missed heartbeat"})
    EXPECT_NE(reasons.find(w), std::string::npos) << reasons;
  for (int w = 0; w < 2; ++w) ASSERT_TRUE(c_.hosts().restore(c_.worker_host(w)).ok());
  ASSERT_GT(seconds_until_workers(2, 30), 0) << "the workers did not join again";
  expect_exact(c_.wait_until_finished(id, 120));
}

TEST_F(Partition, AWorkerThatCannotReadTheDatasetFile) {
  ASSERT_TRUE(c_.start(1, kWorkerArgs, kServerArgs).ok());
  // The second worker's host lacks the data directory (an empty file system there).
  ASSERT_TRUE(c_.add_worker(kWorkerArgs, {c_.dir() + "/data"}).ok());
  ASSERT_TRUE(c_.wait_for_workers(2).ok());
  hash_ = c_.register_program(LIZARD_SOURCE_DIR "/examples/kmeans");
  ASSERT_FALSE(hash_.empty());
  json rec = c_.wait_until_finished(
      c_.submit(hash_, blobs_.request({{"path", blobs_.path}}, kIterations)), 120);
  // The run fails at once, naming the worker and the file it could not open.
  EXPECT_EQ(rec.value("status", ""), "failed") << rec.dump(2);
  const std::string error = rec.value("error", "");
  EXPECT_NE(error.find("worker w2: dataset field 'points': cannot open " + blobs_.path),
            std::string::npos)
      << error;
  // Both workers stay up, and an upload (sent by the server) serves them both.
  auto up = c_.upload_file(blobs_.path);
  ASSERT_TRUE(up.ok() && up->status == 201) << (up.ok() ? up->body : up.status().message());
  json over_upload = c_.wait_until_finished(
      c_.submit(hash_, blobs_.request({{"upload", json::parse(up->body)["id"]}}, kIterations)),
      120);
  expect_exact(over_upload);
  EXPECT_EQ(over_upload["plan"]["executors"].size(), 2u);
}

}  // namespace
}  // namespace lizard
