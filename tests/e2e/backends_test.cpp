// The examples give the same answers on the CUDA backend as on the CPU
// backend: the same requests go to a cluster of one CPU worker and to one of
// one GPU worker.  Needs a GPU (ctest label `gpu`); skips visibly without one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>

#include "dataset/npy.h"
#include "exec/cuda/cuda_executor.h"
#include "json_compare.h"
#include "local_cluster.h"

namespace lizard {
namespace {

using nlohmann::json;

struct Case {
  std::string example;
  std::function<json(const std::string& dir)> request;
};

json run_on(const std::string& backend, const Case& c) {
  LocalCluster cluster;
  Status st = cluster.start(0);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(cluster.add_worker({"--backend", backend}).ok());
  EXPECT_TRUE(cluster.wait_for_workers(1, 60).ok());
  CommandResult r = cluster.load_program(std::string(LIZARD_SOURCE_DIR) + "/examples/" + c.example);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const std::string hash = printed_checksum(r);
  auto reply = cluster.post("/runtime/" + hash + "?wait=1", c.request(cluster.dir()).dump());
  EXPECT_TRUE(reply.ok());
  json rec = json::parse(reply->body, nullptr, false);
  EXPECT_EQ(rec.value("status", ""), "done") << reply->body;
  return rec;
}

// k-means over n points of d dimensions in k blobs, from the first k points.
Case kmeans_case(int n, int d, int k) {
  return {"kmeans", [n, d, k](const std::string& dir) {
            std::mt19937 rng(3);
            std::normal_distribution<float> noise(0.f, 1.f);
            std::vector<float> pts(size_t(n) * d);
            for (int i = 0; i < n; ++i)
              for (int j = 0; j < d; ++j)
                pts[size_t(i) * d + j] = 6.f * ((i % k) == j % k) + noise(rng);
            std::ofstream(dir + "/pts.npy", std::ios::binary)
                << npy_bytes(DType::kFloat32, {n, d}, pts.data());
            std::vector<float> init(pts.begin(), pts.begin() + k * d);
            return json{
                {"params", {{"k", k}, {"dims", d}, {"max_iterations", 10}, {"threshold", -1}}},
                {"dataset", {{"points", {{"path", dir + "/pts.npy"}}}}},
                {"state", {{"centroids", init}}}};
          }};
}

std::vector<Case> cases() {
  return {
      kmeans_case(200000, 8, 5),
      // A table and sums that share a block's shared memory with the
      // aggregate's warp copies, on the tensor cores.
      kmeans_case(100000, 32, 64),
      {"anneal",
       [](const std::string&) {
         std::vector<uint64_t> seeds;
         for (uint64_t i = 1; i <= 256; ++i) seeds.push_back(i);
         return json{{"params", {{"steps", 500}, {"max_iterations", 6}}},
                     {"dataset", {{"seed", {{"values", seeds}}}}},
                     {"seed", 7}};
       }},
      {"logreg",
       [](const std::string& dir) {
         const int n = 20000, d = 6;
         std::mt19937 rng(5);
         std::normal_distribution<float> g(0.f, 1.f);
         std::vector<float> x(size_t(n) * d), y(n);
         for (int i = 0; i < n; ++i) {
           float z = 0.3f;
           for (int j = 0; j < d; ++j) z += (j - 2.5f) * (x[size_t(i) * d + j] = g(rng));
           y[i] = z + g(rng) > 0 ? 1.f : 0.f;
         }
         std::ofstream(dir + "/x.npy", std::ios::binary)
             << npy_bytes(DType::kFloat32, {n, d}, x.data());
         std::ofstream(dir + "/y.npy", std::ios::binary)
             << npy_bytes(DType::kFloat32, {n}, y.data());
         return json{
             {"params", {{"dims", d}, {"lr", 0.5}, {"tol", 0}, {"max_iterations", 40}}},
             {"dataset", {{"x", {{"path", dir + "/x.npy"}}}, {"y", {{"path", dir + "/y.npy"}}}}}};
       }},
      {"sum",
       [](const std::string&) {
         return json{{"params", {{"dims", 8}}},
                     {"dataset",
                      {{"values", {{"path", LIZARD_TEST_DATA_DIR "/lizard-demo-n2048-d8.csv"}}}}}};
       }},
  };
}

TEST(Backends, ExamplesMatchBetweenCpuAndGpu) {
  auto gpus = make_cuda_executors(CudaOptions{});
  if (!gpus.ok()) {
    if (std::getenv("LIZARD_REQUIRE_GPU")) FAIL() << "no GPU: " << gpus.status().message();
    GTEST_SKIP() << "no CUDA device: " << gpus.status().message();
  }
  gpus->clear();
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.example);
    json cpu = run_on("cpu", c), gpu = run_on("cuda", c);
    ASSERT_TRUE(cpu.contains("result") && gpu.contains("result"));
    EXPECT_EQ(cpu["iterations"], gpu["iterations"]);
    expect_numbers_close(cpu["result"], gpu["result"], 1e-4, c.example);
  }
}

}  // namespace
}  // namespace lizard
