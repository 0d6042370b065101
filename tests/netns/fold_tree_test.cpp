// A fold tree over real links: 32 worker processes on 8 hosts (network
// namespaces), 4 on each, with the server at fan-in 4.  Each host's workers
// fold into one of them, and those 8 into 2 that send the server: sums come
// out exact and k-means the same bits run to run; a worker killed mid-tree
// and then a host cut off mid-run are re-planned around, and the run still
// gives the undisturbed answer.
#include <gtest/gtest.h>

#include <cmath>

#include "netns_cluster.h"

namespace lizard {
namespace {

using nlohmann::json;

constexpr int kHosts = 8, kPerHost = 4, kWorkers = kHosts * kPerHost;
constexpr int64_t kRows = 32000;

json sum_body() {
  json values = json::array();
  for (int64_t i = 0; i < kRows; ++i) values.push_back({double(i % 100), double(i % 7)});
  return {{"params", {{"dims", 2}}}, {"dataset", {{"values", {{"values", values}}}}}};
}

json kmeans_body(int iterations) {
  return {{"params", {{"k", 3}, {"dims", 2}, {"max_iterations", iterations}, {"threshold", -1}}},
          {"dataset", {{"points", {{"generate", "blobs"}, {"seed", 11}, {"rows", kRows}}}}},
          {"state", {{"centroids", {{0, 0}, {3, 3}, {6, 0}}}}}};
}

void expect_near_centroids(const json& a, const json& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t q = 0; q < a.size(); ++q)
    for (size_t j = 0; j < a[q].size(); ++j) {
      const double x = a[q][j], y = b[q][j];
      EXPECT_NEAR(y, x, 1e-5 * std::max(1.0, std::fabs(x))) << "centroid " << q << " dim " << j;
    }
}

TEST(FoldTreeAcrossHosts, ThirtyTwoWorkersOnEightHostsFoldExactlyAndSurviveALossAndACut) {
  NetnsCluster c(kHosts, kPerHost);
  if (!c.available()) GTEST_SKIP() << c.why_unavailable();
  ASSERT_TRUE(c.start(kWorkers, {}, {"--fold-fan-in", "4", "--heartbeat-timeout", "4"}).ok());
  const std::string sum = c.register_program(LIZARD_SOURCE_DIR "/examples/sum");
  const std::string kmeans = c.register_program(LIZARD_SOURCE_DIR "/examples/kmeans");
  ASSERT_FALSE(sum.empty());
  ASSERT_FALSE(kmeans.empty());

  // Sums of integers: exact in any order of addition.
  const json s = c.wait_until_finished(c.submit(sum, sum_body()), 120);
  ASSERT_EQ(s["status"], "done") << s.dump(2);
  double want0 = 0, want1 = 0;
  for (int64_t i = 0; i < kRows; ++i) {
    want0 += double(i % 100);
    want1 += double(i % 7);
  }
  EXPECT_EQ(s["result"]["aggregate"]["count"], kRows);
  EXPECT_EQ(s["result"]["aggregate"]["sums"], json({want0, want1}));
  // 8 host folders in groups of 4: two send the server.
  EXPECT_EQ(s["phases"].value("fold_tree_senders", 0), 2) << s["phases"].dump();

  const json undisturbed = c.wait_until_finished(c.submit(kmeans, kmeans_body(30)), 120);
  ASSERT_EQ(undisturbed["status"], "done") << undisturbed.dump(2);
  const json again = c.wait_until_finished(c.submit(kmeans, kmeans_body(30)), 120);
  EXPECT_EQ(again["result"]["state"], undisturbed["result"]["state"]);

  // A worker killed mid-tree (the second of host 3: below its host's folder).
  std::string id = c.submit(kmeans, kmeans_body(30));
  ASSERT_TRUE(c.wait_for_iterations(id, 3, 60));
  c.kill_worker(2 * kPerHost + 1);
  json rec = c.wait_until_finished(id, 120);
  ASSERT_EQ(rec["status"], "done") << rec.dump(2);
  ASSERT_TRUE(rec.contains("recoveries")) << "the kill came too late to test recovery";
  EXPECT_EQ(rec["recoveries"][0]["kind"], "worker_lost");
  EXPECT_EQ(rec["phases"].value("fold_tree_senders", 0), 2);
  expect_near_centroids(undisturbed["result"]["state"]["centroids"],
                        rec["result"]["state"]["centroids"]);

  // A host cut off mid-run: its workers go silent, no FIN, no RST.
  id = c.submit(kmeans, kmeans_body(30));
  ASSERT_TRUE(c.wait_for_iterations(id, 3, 60));
  ASSERT_TRUE(c.hosts().cut(c.worker_host(5 * kPerHost)).ok());
  rec = c.wait_until_finished(id, 120);
  ASSERT_TRUE(c.hosts().restore(c.worker_host(5 * kPerHost)).ok());
  ASSERT_EQ(rec["status"], "done") << rec.dump(2);
  ASSERT_TRUE(rec.contains("recoveries")) << rec.dump(2);
  expect_near_centroids(undisturbed["result"]["state"]["centroids"],
                        rec["result"]["state"]["centroids"]);
}

}  // namespace
}  // namespace lizard
