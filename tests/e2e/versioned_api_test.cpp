// The REST API under /api/v1 against a real server and worker: the same
// uploads, runs and fields as the paths before it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dataset/npy.h"
#include "local_cluster.h"

namespace lizard {
namespace {

using nlohmann::json;

// The same work through the routes under /api/v1: an upload larger than
// --max-body streams to disk as it does on /datasets, a run starts from the
// program's runs, and its record and fields are read from /api/v1/runs.
TEST(VersionedApi, AnUploadARunAndItsFieldsThroughApiV1) {
  LocalCluster c;
  ASSERT_TRUE(c.start(1, {}, {"--max-body", "65536"}).ok());
  const std::string hash = register_program(c, LIZARD_SOURCE_DIR "/examples/kmeans");
  std::vector<float> pts;
  for (int i = 0; i < 30000; ++i) pts.insert(pts.end(), {float(i % 3) * 5, float(i % 3)});
  const std::string bytes = npy_bytes(DType::kFloat32, {30000, 2}, pts.data());
  ASSERT_GT(bytes.size(), 65536u);

  auto up =
      http_request("POST", c.uri() + "/api/v1/datasets", bytes, "application/octet-stream", 60);
  ASSERT_TRUE(up.ok());
  ASSERT_EQ(up->status, 201) << up->body;
  const std::string id = json::parse(up->body)["id"];
  EXPECT_EQ(get_json(c, "/api/v1/datasets")["uploads"].size(), 1u);

  json body = {{"params", {{"k", 3}, {"dims", 2}, {"max_iterations", 5}}},
               {"dataset", {{"points", {{"upload", id}}}}},
               {"state", {{"centroids", {{0, 0}, {4, 1}, {11, 2}}}}}};
  auto r = c.post("/api/v1/programs/" + hash + "/runs?wait=1", body.dump());
  ASSERT_TRUE(r.ok());
  json run = json::parse(r->body);
  ASSERT_EQ(run.value("status", ""), "done") << run.dump(2);
  EXPECT_EQ(run["result"]["aggregate"]["counts"], json({10000, 10000, 10000}));
  const std::string run_id = run["runtime_id"];
  EXPECT_EQ(get_json(c, "/api/v1/runs/" + run_id)["status"], "done");
  auto labels = c.get("/api/v1/runs/" + run_id + "/fields/labels.npy");
  ASSERT_TRUE(labels.ok());
  EXPECT_EQ(labels->status, 200);
  EXPECT_EQ(labels->body, c.get("/runtimes/" + run_id + "/fields/labels.npy")->body);
  EXPECT_EQ(get_json(c, "/api/v1/workers").size(), 1u);
}

}  // namespace
}  // namespace lizard
