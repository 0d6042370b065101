// Runs on one worker, which drives their loop itself, and uploaded rows that
// workers keep for later runs: both change how fast a run goes, not its
// answer (beyond the rounding that the order of atomic additions varies).  Expectations come from
// the record, so they hold whatever number of executors each worker has.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "dataset/npy.h"
#include "json_compare.h"
#include "local_cluster.h"
#include "net/http_client.h"

namespace lizard {
namespace {

using nlohmann::json;

// k-means over points written to `dir`, for 8 full iterations.
json kmeans_run(LocalCluster& c, const std::string& hash, const json& points) {
  std::vector<float> init;
  for (int q = 0; q < 4; ++q)
    for (int j = 0; j < 3; ++j) init.push_back(static_cast<float>(q * 2 - j));
  json body = {{"params", {{"k", 4}, {"dims", 3}, {"max_iterations", 8}, {"threshold", -1}}},
               {"dataset", {{"points", points}}},
               {"state", {{"centroids", init}}}};
  auto r = c.post("/runtime/" + hash + "?wait=1", body.dump());
  if (!r.ok()) return json();
  return json::parse(r->body, nullptr, false);
}

std::string write_points(const std::string& dir) {
  std::mt19937 rng(11);
  std::normal_distribution<float> noise(0.f, 1.f);
  const int64_t rows = 30000;
  std::vector<float> pts(rows * 3);
  for (int64_t i = 0; i < rows; ++i)
    for (int j = 0; j < 3; ++j)
      pts[i * 3 + j] = static_cast<float>((i % 4) * 5 * (j + 1)) + noise(rng);
  const std::string path = dir + "/points.npy";
  std::ofstream(path, std::ios::binary) << npy_bytes(DType::kFloat32, {rows, 3}, pts.data());
  return path;
}

TEST(WorkerLoop, ARunOnOneWorkerGivesTheServerDrivenAnswer) {
  json by_worker, by_server;
  for (bool loop : {true, false}) {
    LocalCluster c;
    std::vector<std::string> server_args;
    if (!loop) server_args.push_back("--no-worker-loop");
    ASSERT_TRUE(c.start(1, {}, server_args).ok());
    const std::string hash = register_program(c, LIZARD_SOURCE_DIR "/examples/kmeans");
    json rec = kmeans_run(c, hash, {{"path", write_points(c.dir())}});
    ASSERT_EQ(rec.value("status", ""), "done") << rec.dump(2);
    EXPECT_EQ(rec["phases"]["worker_loop"], loop) << rec["phases"].dump();
    EXPECT_EQ(rec["iterations"], 8);
    ASSERT_EQ(rec["timings"].size(), 8u);  // every iteration recorded either way
    (loop ? by_worker : by_server) = rec;
  }
  // The same folds and the same hook on the same rows: the same answer, to
  // the rounding of the kernels' atomic additions (their order varies).
  expect_numbers_close(by_worker["result"], by_server["result"], 1e-5, "result");
  for (size_t i = 0; i < 8; ++i)
    expect_numbers_close(by_worker["timings"][i]["state"], by_server["timings"][i]["state"], 1e-4,
                         "state after iteration " + std::to_string(i));
}

TEST(WorkerLoop, ARunOverSeveralWorkersIsDrivenByTheServer) {
  LocalCluster c;
  ASSERT_TRUE(c.start(2).ok());
  const std::string hash = register_program(c, LIZARD_SOURCE_DIR "/examples/kmeans");
  json rec = kmeans_run(c, hash, {{"path", write_points(c.dir())}});
  ASSERT_EQ(rec.value("status", ""), "done") << rec.dump(2);
  EXPECT_EQ(plan_workers(rec).size(), 2u);
  EXPECT_EQ(rec["phases"]["worker_loop"], false);
}

// Workers that cannot read the server's copy of an upload (it lies outside
// their --data-root, as on another host): the first run streams the upload
// to them; the next finds it there.  A worker that keeps nothing is sent it
// every time.  The answer is the same.
TEST(UploadCache, ALaterRunOverAnUploadFindsItsRowsOnTheWorkers) {
  LocalCluster c;
  const std::string elsewhere = c.dir() + "/worker-data";
  std::filesystem::create_directories(elsewhere);
  ASSERT_TRUE(c.start(0).ok());
  ASSERT_TRUE(c.add_worker({"--data-root", elsewhere}).ok());
  ASSERT_TRUE(c.add_worker({"--data-root", elsewhere, "--upload-cache-mb", "0"}).ok());
  ASSERT_TRUE(c.wait_for_workers(2).ok());
  const std::string hash = register_program(c, LIZARD_SOURCE_DIR "/examples/kmeans");
  auto up = http_upload_file("POST", c.uri() + "/datasets", write_points(c.dir()));
  ASSERT_TRUE(up.ok() && up->status == 201) << (up.ok() ? up->body : up.status().message());
  const std::string id = json::parse(up->body)["id"];
  json first = kmeans_run(c, hash, {{"upload", id}});
  json second = kmeans_run(c, hash, {{"upload", id}});
  ASSERT_EQ(first.value("status", ""), "done") << first.dump(2);
  ASSERT_EQ(second.value("status", ""), "done") << second.dump(2);
  EXPECT_EQ(first["phases"]["uploads_cached"], false);
  EXPECT_EQ(second["phases"]["uploads_cached"], false);  // one worker keeps nothing
  expect_numbers_close(first["result"], second["result"], 1e-5, "result");

  // With one worker that keeps what it is sent, the second run finds it all.
  LocalCluster k;
  const std::string away = k.dir() + "/worker-data";
  std::filesystem::create_directories(away);
  ASSERT_TRUE(k.start(1, {"--data-root", away}).ok());
  const std::string h = register_program(k, LIZARD_SOURCE_DIR "/examples/kmeans");
  auto u = http_upload_file("POST", k.uri() + "/datasets", write_points(k.dir()));
  ASSERT_TRUE(u.ok() && u->status == 201);
  const std::string kid = json::parse(u->body)["id"];
  json a = kmeans_run(k, h, {{"upload", kid}});
  json b = kmeans_run(k, h, {{"upload", kid}});
  ASSERT_EQ(b.value("status", ""), "done") << b.dump(2);
  EXPECT_EQ(a["phases"]["uploads_cached"], false);
  EXPECT_EQ(b["phases"]["uploads_cached"], true);
  expect_numbers_close(a["result"], b["result"], 1e-5, "result");
}

// A worker that sees the server's copy of an upload (the same host) reads
// the rows from there, as from a file named by path: nothing is sent, and
// its executors keep the rows for the next run, which reads nothing.  The
// answer is that of a worker sent the rows.
TEST(UploadCache, AWorkerThatSeesTheServersCopyReadsItAndSendsNothing) {
  LocalCluster c;
  ASSERT_TRUE(c.start(1).ok());
  const std::string hash = register_program(c, LIZARD_SOURCE_DIR "/examples/kmeans");
  const std::string points = write_points(c.dir());
  auto up = http_upload_file("POST", c.uri() + "/datasets", points);
  ASSERT_TRUE(up.ok() && up->status == 201) << (up.ok() ? up->body : up.status().message());
  const std::string id = json::parse(up->body)["id"];
  const uint64_t bytes = 30000 * 3 * sizeof(float);  // write_points' rows
  json first = kmeans_run(c, hash, {{"upload", id}});
  json second = kmeans_run(c, hash, {{"upload", id}});
  ASSERT_EQ(first.value("status", ""), "done") << first.dump(2);
  ASSERT_EQ(second.value("status", ""), "done") << second.dump(2);
  EXPECT_EQ(first["phases"]["uploads_cached"], true) << first["phases"].dump();
  EXPECT_EQ(first["phases"]["file_bytes_read"], bytes) << first["phases"].dump();
  EXPECT_EQ(second["phases"]["file_bytes_read"], 0u) << second["phases"].dump();
  EXPECT_EQ(second["phases"]["file_bytes_kept"], bytes) << second["phases"].dump();
  EXPECT_FALSE(first.contains("files")) << "the server's copy is no file of the request";

  LocalCluster sent;  // its worker is sent the rows
  const std::string away = sent.dir() + "/worker-data";
  std::filesystem::create_directories(away);
  ASSERT_TRUE(sent.start(1, {"--data-root", away}).ok());
  const std::string h = register_program(sent, LIZARD_SOURCE_DIR "/examples/kmeans");
  auto u = http_upload_file("POST", sent.uri() + "/datasets", points);
  ASSERT_TRUE(u.ok() && u->status == 201);
  json streamed = kmeans_run(sent, h, {{"upload", json::parse(u->body)["id"]}});
  ASSERT_EQ(streamed.value("status", ""), "done") << streamed.dump(2);
  EXPECT_EQ(streamed["phases"]["uploads_cached"], false);
  expect_numbers_close(first["result"], streamed["result"], 1e-5, "result");
}

}  // namespace
}  // namespace lizard
