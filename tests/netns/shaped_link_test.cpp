// Links shaped to 1 Gbit/s with a token bucket (tc tbf): an upload over the
// user's link takes at least the time the rate implies and its answer reports
// a rate the link allows; the rows the server then streams to a worker over
// that worker's shaped link take at least their time too.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "blobs.h"
#include "netns_cluster.h"

namespace lizard {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr double kLinkBytesPerS = 1e9 / 8;  // 1 Gbit/s

TEST(ShapedLink, UploadsAndRowsToWorkersRespectAOneGigabitLink) {
  NetnsCluster c(1);
  if (!c.available()) GTEST_SKIP() << "no network namespaces here: " << c.why_unavailable();
  ASSERT_TRUE(c.start(1).ok());
  const std::string hash = c.register_program(LIZARD_SOURCE_DIR "/examples/kmeans");
  ASSERT_FALSE(hash.empty());
  KmeansBlobs blobs(c.dir() + "/data", 4000000);  // 64 MB of rows
  ASSERT_TRUE(c.hosts().shape(c.user_host(), "1gbit").ok());
  ASSERT_TRUE(c.hosts().shape(c.worker_host(0), "1gbit").ok());

  const auto t0 = Clock::now();
  auto up = c.upload_file(blobs.path);
  const double upload_s = std::chrono::duration<double>(Clock::now() - t0).count();
  ASSERT_TRUE(up.ok() && up->status == 201) << (up.ok() ? up->body : up.status().message());
  const json answer = json::parse(up->body);
  const double bytes = answer["bytes"].get<double>();
  // The bucket's 1 MiB burst is all that may pass faster than the rate.
  const double floor_s = (bytes - (1 << 20)) / kLinkBytesPerS;
  EXPECT_GE(upload_s, floor_s);
  ASSERT_TRUE(answer.contains("receive_bytes_per_s")) << answer.dump(2);
  const double reported = answer["receive_bytes_per_s"].get<double>();
  const double receive_s = answer["receive_ms"].get<double>() / 1000;
  EXPECT_LE(reported, kLinkBytesPerS * 1.1) << answer.dump(2);
  EXPECT_NEAR(reported, bytes / receive_s, bytes / receive_s * 0.01);
  EXPECT_GE(receive_s, floor_s * 0.95);  // the server's own measure of the same transfer
  EXPECT_LE(receive_s, upload_s);
  std::fprintf(stderr, "upload of %.0f MB over 1 Gbit/s: %.2f s, reported %.0f MB/s\n", bytes / 1e6,
               upload_s, reported / 1e6);

  // The server streams the rows to the worker over its shaped link.
  json rec =
      c.wait_until_finished(c.submit(hash, blobs.request({{"upload", answer["id"]}}, 2)), 120);
  ASSERT_EQ(rec.value("status", ""), "done") << rec.dump(2);
  EXPECT_EQ(rec["result"]["aggregate"]["counts"], blobs.counts());
  EXPECT_GE(rec["phases"]["loading_ms"].get<double>() / 1000, floor_s) << rec["phases"].dump(2);
}

}  // namespace
}  // namespace lizard
