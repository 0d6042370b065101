// A cluster across hosts (network namespaces on a bridge), over TLS with a
// token: the server on one host, a worker on each of two others, the user on
// a fourth.  A run, a run over an upload, a worker killed with SIGKILL mid-run
// and a server restarted mid-run all end with the exact answer.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>

#include "blobs.h"
#include "dataset/npy.h"
#include "netns_cluster.h"

namespace lizard {
namespace {

using nlohmann::json;

#define SKIP_WITHOUT_NAMESPACES(c) \
  if (!(c).available()) GTEST_SKIP() << "no network namespaces here: " << (c).why_unavailable()

// The sums of 0 .. n-1 in float64 are exact however the rows are split.
json sum_request(const json& source) {
  return {{"params", {{"dims", 1}}}, {"dataset", {{"values", source}}}};
}

void expect_centroids_near(const json& got, const json& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t q = 0; q < want.size(); ++q)
    for (size_t j = 0; j < want[q].size(); ++j) {
      const double x = want[q][j], y = got[q][j];
      EXPECT_NEAR(y, x, 1e-5 * std::max(1.0, std::fabs(x))) << "centroid " << q << " dim " << j;
    }
}

TEST(AcrossHosts, ARunOverTlsWithATokenIsExact) {
  NetnsCluster c;
  SKIP_WITHOUT_NAMESPACES(c);
  ASSERT_TRUE(c.start(2).ok());
  // Each worker joined from its own host's address.
  std::set<std::string> addresses;
  for (const auto& w : c.get_json("/clients"))
    addresses.insert(w.value("address", "").substr(0, w.value("address", "").find(':')));
  EXPECT_EQ(addresses, (std::set<std::string>{NetnsHosts::address(c.worker_host(0)),
                                              NetnsHosts::address(c.worker_host(1))}));
  // Without the token the user may not write.
  auto refused = c.hosts().in_host(c.user_host(), [&] {
    return http_request("POST", c.uri() + "/programs", "{}", "application/json", 10, "",
                        {true, c.dir() + "/ca.pem"});
  });
  ASSERT_TRUE(refused.ok()) << refused.status().message();
  EXPECT_EQ(refused->status, 401);

  const std::string hash = c.register_program(LIZARD_SOURCE_DIR "/examples/sum");
  ASSERT_FALSE(hash.empty());
  std::vector<double> values(6000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i);
  json rec = c.wait_until_finished(c.submit(hash, sum_request({{"values", values}})), 60);
  ASSERT_EQ(rec.value("status", ""), "done") << rec.dump(2);
  EXPECT_EQ(rec["result"]["aggregate"]["sums"][0], 5999.0 * 6000 / 2);
  EXPECT_EQ(rec["result"]["aggregate"]["count"], 6000);
  std::set<std::string> planned;
  for (const auto& e : rec["plan"]["executors"]) planned.insert(e.value("worker", ""));
  EXPECT_EQ(planned.size(), 2u) << rec["plan"].dump(2);
}

TEST(AcrossHosts, AnUploadFeedsARun) {
  NetnsCluster c;
  SKIP_WITHOUT_NAMESPACES(c);
  ASSERT_TRUE(c.start(2).ok());
  const std::string hash = c.register_program(LIZARD_SOURCE_DIR "/examples/sum");
  ASSERT_FALSE(hash.empty());
  const int64_t n = 1 << 20;  // 8 MiB of float64
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = static_cast<double>(i);
  const std::string file = c.dir() + "/values.npy";
  std::ofstream(file, std::ios::binary) << npy_bytes(DType::kFloat64, {n, 1}, values.data());
  auto up = c.upload_file(file);
  ASSERT_TRUE(up.ok()) << up.status().message();
  ASSERT_EQ(up->status, 201) << up->body;
  const std::string id = json::parse(up->body).value("id", "");
  json rec = c.wait_until_finished(c.submit(hash, sum_request({{"upload", id}})), 60);
  ASSERT_EQ(rec.value("status", ""), "done") << rec.dump(2);
  EXPECT_EQ(rec["result"]["aggregate"]["sums"][0], (n - 1.0) * n / 2);
  EXPECT_EQ(rec["result"]["aggregate"]["count"], n);
}

TEST(AcrossHosts, AWorkerKilledMidRunLeavesTheAnswerUnchanged) {
  NetnsCluster c;
  SKIP_WITHOUT_NAMESPACES(c);
  ASSERT_TRUE(c.start(2).ok());
  const std::string hash = c.register_program(LIZARD_SOURCE_DIR "/examples/kmeans");
  ASSERT_FALSE(hash.empty());
  KmeansBlobs blobs(c.dir() + "/data", 1000000);
  const json body = blobs.request({{"path", blobs.path}}, 12);
  json undisturbed = c.wait_until_finished(c.submit(hash, body), 120);
  ASSERT_EQ(undisturbed.value("status", ""), "done") << undisturbed.dump(2);

  const std::string id = c.submit(hash, body);
  ASSERT_TRUE(c.wait_for_iterations(id, 2));
  c.kill_worker(1);
  json rec = c.wait_until_finished(id, 120);
  ASSERT_EQ(rec.value("status", ""), "done") << rec.dump(2);
  EXPECT_EQ(rec["iterations"], 12);
  ASSERT_TRUE(rec.contains("recoveries")) << "the kill came too late to test recovery";
  EXPECT_EQ(rec["plan"]["executors"].size(), 1u);  // the survivor's
  EXPECT_EQ(rec["result"]["aggregate"]["counts"], blobs.counts());
  expect_centroids_near(rec["result"]["state"]["centroids"],
                        undisturbed["result"]["state"]["centroids"]);
}

TEST(AcrossHosts, AServerRestartedMidRunEndsWithTheUndisturbedAnswer) {
  NetnsCluster c;
  SKIP_WITHOUT_NAMESPACES(c);
  ASSERT_TRUE(c.start(2).ok());
  const std::string hash = c.register_program(LIZARD_SOURCE_DIR "/examples/kmeans");
  ASSERT_FALSE(hash.empty());
  KmeansBlobs blobs(c.dir() + "/data", 1000000);
  const json body = blobs.request({{"path", blobs.path}}, 12);
  json undisturbed = c.wait_until_finished(c.submit(hash, body), 120);
  ASSERT_EQ(undisturbed.value("status", ""), "done") << undisturbed.dump(2);

  const std::string id = c.submit(hash, body);
  ASSERT_TRUE(c.wait_for_iterations(id, 2));
  ASSERT_TRUE(c.restart_server().ok());
  json rec = c.wait_until_finished(id, 120);
  ASSERT_EQ(rec.value("status", ""), "done") << rec.dump(2);
  EXPECT_EQ(rec["iterations"], 12);
  EXPECT_TRUE(rec.contains("recoveries")) << rec.dump(2);
  // Both workers came back over the network, and the run has the same plan
  // and so the same answer, bit for bit.
  EXPECT_EQ(c.worker_count(), 2);
  EXPECT_EQ(rec["result"], undisturbed["result"]);
}

}  // namespace
}  // namespace lizard
