// Runs whose workers fold their results along a tree (--fold-fan-in), with
// real processes on one host: the answer is the one the server's own fold
// gives, exactly for sums; a worker killed mid-tree is re-planned around;
// and a worker that goes silent below another leaves the run to fold at
// the server, which says so in the record.
#include <signal.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <thread>

#include "dataset/npy.h"
#include "local_cluster.h"

namespace lizard {
namespace {

using nlohmann::json;

constexpr int kWorkers = 5;
constexpr int64_t kRows = 50000;

// A float64 table whose column sums are exact in any order of addition.
std::string write_values(const std::string& dir) {
  std::vector<double> v(static_cast<size_t>(kRows) * 2);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i % 1000);
  const std::string path = dir + "/values.npy";
  std::ofstream(path, std::ios::binary) << npy_bytes(DType::kFloat64, {kRows, 2}, v.data());
  return path;
}

json kmeans_body(int iterations) {
  return {{"params", {{"k", 3}, {"dims", 2}, {"max_iterations", iterations}, {"threshold", -1}}},
          {"dataset", {{"points", {{"generate", "blobs"}, {"seed", 7}, {"rows", kRows}}}}},
          {"state", {{"centroids", {{0, 0}, {3, 3}, {6, 0}}}}}};
}

// The index of the worker the server registered as `id` (its log says so).
int worker_registered_as(const LocalCluster& c, const std::string& id) {
  for (size_t i = 0; i < c.worker_pids().size(); ++i)
    if (read_file(c.dir() + "/worker" + std::to_string(i) + ".log")
            .find("registered with the server as " + id + "\n") != std::string::npos)
      return static_cast<int>(i);
  return -1;
}

// The worker the run's plan names second once it is running: at fan-in 2
// on one host, a leaf below the first, the sender.
int leaf_below_the_sender(const LocalCluster& c, const std::string& id) {
  const json rec = get_json(c, "/runtimes/" + id);
  const json& plan = rec["plan"]["executors"];
  EXPECT_GE(plan.size(), 2u) << rec.dump(2);
  return plan.size() < 2 ? -1 : worker_registered_as(c, plan[1]["worker"]);
}

json run_to_end(const LocalCluster& c, const std::string& hash, const json& body) {
  const std::string id = submit_run(c, hash, body);
  EXPECT_FALSE(id.empty());
  return wait_until_finished(c, id, 120);
}

void expect_same_centroids(const json& a, const json& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t q = 0; q < a.size(); ++q)
    for (size_t j = 0; j < a[q].size(); ++j) {
      const double x = a[q][j], y = b[q][j];
      EXPECT_NEAR(y, x, 1e-5 * std::max(1.0, std::fabs(x))) << "centroid " << q << " dim " << j;
    }
}

// Whether the cluster's workers run on GPUs (GET /clients).
bool on_gpus(const LocalCluster& c) {
  for (const json& w : get_json(c, "/clients"))
    for (const json& e : w["hardware"]["executors"])
      if (e.value("kind", "") == "cuda") return true;
  return false;
}

// The server's own fold of every worker's result: what the tree must match.
struct FlatAnswers {
  json sums, centroids;
};
FlatAnswers flat_answers(const std::string& values) {
  LocalCluster flat;
  EXPECT_TRUE(flat.start(kWorkers, {"--cpu-threads", "1"}, {"--fold-fan-in", "0"}).ok());
  const json sum =
      run_to_end(flat, register_program(flat, LIZARD_SOURCE_DIR "/examples/sum"),
                 {{"params", {{"dims", 2}}}, {"dataset", {{"values", {{"path", values}}}}}});
  const json kmeans = run_to_end(flat, register_program(flat, LIZARD_SOURCE_DIR "/examples/kmeans"),
                                 kmeans_body(15));
  EXPECT_FALSE(sum["phases"].contains("fold_tree_senders")) << sum.dump();
  return {sum["result"]["aggregate"], kmeans["result"]["state"]["centroids"]};
}

TEST(FoldTree, SumAndKmeansThroughTheTreeGiveTheServersAnswer) {
  LocalCluster c;
  ASSERT_TRUE(c.start(kWorkers, {"--cpu-threads", "1"}, {"--fold-fan-in", "2"}).ok());
  const std::string values = write_values(c.dir());
  const FlatAnswers flat = flat_answers(values);
  const json sum =
      run_to_end(c, register_program(c, LIZARD_SOURCE_DIR "/examples/sum"),
                 {{"params", {{"dims", 2}}}, {"dataset", {{"values", {{"path", values}}}}}});
  ASSERT_EQ(sum["status"], "done") << sum.dump(2);
  EXPECT_EQ(plan_workers(sum).size(), static_cast<size_t>(kWorkers));
  // Five workers of one host at fan-in 2: one result reaches the server.
  EXPECT_EQ(sum["phases"].value("fold_tree_senders", 0), 1) << sum["phases"].dump();
  EXPECT_EQ(sum["result"]["aggregate"], flat.sums);
  EXPECT_EQ(sum["result"]["aggregate"]["count"], kRows);
  const json kmeans =
      run_to_end(c, register_program(c, LIZARD_SOURCE_DIR "/examples/kmeans"), kmeans_body(15));
  ASSERT_EQ(kmeans["status"], "done") << kmeans.dump(2);
  EXPECT_EQ(kmeans["iterations"], 15);
  EXPECT_EQ(kmeans["phases"].value("fold_tree_senders", 0), 1);
  expect_same_centroids(flat.centroids, kmeans["result"]["state"]["centroids"]);
  // The same run again folds in the same order: on CPUs, whose partials
  // are the same bits each time, the same bits; a GPU's atomic adds differ
  // in their last bits from run to run.
  const json again =
      run_to_end(c, register_program(c, LIZARD_SOURCE_DIR "/examples/kmeans"), kmeans_body(15));
  if (on_gpus(c))
    expect_same_centroids(kmeans["result"]["state"]["centroids"],
                          again["result"]["state"]["centroids"]);
  else
    EXPECT_EQ(again["result"]["state"], kmeans["result"]["state"]);
  // GET /clients names where each worker takes fold links.
  for (const json& w : get_json(c, "/clients"))
    EXPECT_TRUE(w["fold_address"].is_string()) << w.dump();
}

TEST(FoldTree, AWorkerKilledMidTreeIsReplannedAroundAndTheAnswerHolds) {
  LocalCluster c;
  ASSERT_TRUE(c.start(kWorkers, {"--cpu-threads", "1"}, {"--fold-fan-in", "2"}).ok());
  const std::string kmeans = register_program(c, LIZARD_SOURCE_DIR "/examples/kmeans");
  const json undisturbed = run_to_end(c, kmeans, kmeans_body(40));
  ASSERT_EQ(undisturbed["status"], "done") << undisturbed.dump(2);
  const std::string id = submit_run(c, kmeans, kmeans_body(40));
  ASSERT_TRUE(wait_for_iterations(c, id, 3, 60));
  const size_t planned = plan_workers(get_json(c, "/runtimes/" + id)).size();
  const int victim = leaf_below_the_sender(c, id);
  ASSERT_GE(victim, 0);
  c.kill_worker(static_cast<size_t>(victim), SIGKILL);
  const json rec = wait_until_finished(c, id, 120);
  ASSERT_EQ(rec["status"], "done") << rec.dump(2);
  EXPECT_EQ(rec["iterations"], 40);
  ASSERT_TRUE(rec.contains("recoveries")) << "the kill came too late to test recovery";
  EXPECT_EQ(rec["recoveries"][0]["kind"], "worker_lost");
  EXPECT_EQ(plan_workers(rec).size(), planned - 1);
  EXPECT_EQ(rec["phases"].value("fold_tree_senders", 0), 1);
  EXPECT_FALSE(rec["phases"].contains("fold_tree_failed"));
  expect_same_centroids(undisturbed["result"]["state"]["centroids"],
                        rec["result"]["state"]["centroids"]);
}

TEST(FoldTree, AWorkerSilentBelowAnotherLeavesTheRunToTheServersFold) {
  LocalCluster c;
  // A parent waits half the iteration timeout for a child's result.
  ASSERT_TRUE(c.start(kWorkers, {"--cpu-threads", "1"},
                      {"--fold-fan-in", "2", "--iteration-timeout", "4", "--load-timeout", "3"})
                  .ok());
  const std::string kmeans = register_program(c, LIZARD_SOURCE_DIR "/examples/kmeans");
  const json undisturbed = run_to_end(c, kmeans, kmeans_body(30));
  ASSERT_EQ(undisturbed["status"], "done") << undisturbed.dump(2);
  // Every worker in the run, so the tree is the one the test reasons about.
  json body = kmeans_body(30);
  body["executors"] = kWorkers;
  const std::string id = submit_run(c, kmeans, body);
  ASSERT_TRUE(wait_for_iterations(c, id, 3, 60));
  const int leaf = leaf_below_the_sender(c, id);
  ASSERT_GE(leaf, 0);
  const pid_t silent = c.worker_pids()[static_cast<size_t>(leaf)];
  kill(silent, SIGSTOP);
  const json rec = wait_until_finished(c, id, 120);
  kill(silent, SIGCONT);
  ASSERT_EQ(rec["status"], "done") << rec.dump(2);
  EXPECT_EQ(rec["iterations"], 30);
  ASSERT_TRUE(rec.contains("recoveries")) << rec.dump(2);
  EXPECT_EQ(rec["recoveries"][0]["kind"], "fold_tree_failed") << rec["recoveries"].dump(2);
  EXPECT_NE(rec["recoveries"][0].value("reason", "").find("sent nothing"), std::string::npos)
      << rec["recoveries"].dump(2);
  EXPECT_EQ(rec["phases"].value("fold_tree_failed", false), true);
  expect_same_centroids(undisturbed["result"]["state"]["centroids"],
                        rec["result"]["state"]["centroids"]);
}

}  // namespace
}  // namespace lizard
