// Many runs at once with real processes: runs placed on disjoint executors
// proceed side by side, give the answers they give alone, show where they
// run, and a run the cluster can never serve fails at once.  Expectations
// come from GET /clients, so they hold whatever number of executors each
// worker has.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "json_compare.h"
#include "local_cluster.h"
#include "net/http_client.h"

namespace lizard {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

class Concurrency : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(c_.start(2, {"--cpu-threads", "1"}).ok());
    kmeans_ = register_program(c_, LIZARD_SOURCE_DIR "/examples/kmeans");
    sum_ = register_program(c_, LIZARD_SOURCE_DIR "/examples/sum");
    ASSERT_FALSE(kmeans_.empty());
    ASSERT_FALSE(sum_.empty());
  }

  // k-means on generated blobs: `iterations` full iterations, one executor.
  json kmeans_body(int64_t rows, int iterations, uint64_t seed) const {
    std::vector<float> init;
    for (int q = 0; q < 4; ++q)
      for (int j = 0; j < 2; ++j) init.push_back(static_cast<float>(q * 3 + j));
    return {{"params", {{"k", 4}, {"dims", 2}, {"max_iterations", iterations}, {"threshold", -1}}},
            {"dataset", {{"points", {{"generate", "blobs"}, {"seed", seed}, {"rows", rows}}}}},
            {"state", {{"centroids", init}}},
            {"executors", 1}};
  }
  json sum_body() const {
    return {{"params", {{"dims", 2}}},
            {"dataset", {{"values", {{"values", {{1.5, 2.5}, {3.0, 4.0}}}}}}},
            {"executors", 1}};
  }

  LocalCluster c_;
  std::string kmeans_, sum_;
};

TEST_F(Concurrency, AShortRunStartsAndEndsWhileALongRunHoldsAnotherExecutor) {
  ASSERT_GE(executor_count(c_), 2u);
  const std::string long_run = submit_run(c_, kmeans_, kmeans_body(200000, 100000, 1));
  ASSERT_FALSE(long_run.empty());
  for (int i = 0; i < 1000 && get_json(c_, "/runtimes/" + long_run)["status"] != "running"; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  json held = get_json(c_, "/runtimes/" + long_run);
  ASSERT_EQ(held["status"], "running") << held.dump(2);
  ASSERT_EQ(held["executors"].size(), 1u) << held.dump(2);

  const std::string short_run = submit_run(c_, sum_, sum_body());
  json done = wait_until_finished(c_, short_run, 60);
  ASSERT_EQ(done["status"], "done") << done.dump(2);
  EXPECT_EQ(done["result"]["aggregate"]["sums"], json({4.5, 6.5})) << done.dump(2);
  ASSERT_EQ(done["executors_requested"]["min"], 1);
  EXPECT_EQ(get_json(c_, "/runtimes/" + long_run)["status"], "running")
      << "the short run should not have waited for the long one";
  // GET /clients shows which run each executor serves.  The finished run's
  // executor is given back just after its record says "done".
  std::set<std::string> serving;
  for (int i = 0; i < 500; ++i) {
    serving.clear();
    for (const auto& w : get_json(c_, "/clients"))
      for (const auto& e : w["hardware"]["executors"])
        if (e["run"].is_string()) serving.insert(e["run"].get<std::string>());
    if (serving == std::set<std::string>{long_run}) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(serving, std::set<std::string>{long_run});

  auto cancel = http_request("DELETE", c_.uri() + "/runtimes/" + long_run, "", "", 30);
  ASSERT_TRUE(cancel.ok());
  EXPECT_EQ(wait_until_finished(c_, long_run, 60)["status"], "cancelled");
}

TEST_F(Concurrency, RunsOnDisjointExecutorsGiveTheAnswersTheyGiveAlone) {
  ASSERT_GE(executor_count(c_), 2u);
  json alone_a = wait_until_finished(c_, submit_run(c_, kmeans_, kmeans_body(30000, 8, 11)), 120);
  json alone_b = wait_until_finished(c_, submit_run(c_, kmeans_, kmeans_body(40000, 8, 22)), 120);
  ASSERT_EQ(alone_a["status"], "done") << alone_a.dump(2);
  ASSERT_EQ(alone_b["status"], "done") << alone_b.dump(2);

  const std::string a = submit_run(c_, kmeans_, kmeans_body(30000, 8, 11));
  const std::string b = submit_run(c_, kmeans_, kmeans_body(40000, 8, 22));
  json together_a = wait_until_finished(c_, a, 120);
  json together_b = wait_until_finished(c_, b, 120);
  ASSERT_EQ(together_a["status"], "done") << together_a.dump(2);
  ASSERT_EQ(together_b["status"], "done") << together_b.dump(2);
  // The same answers, to the rounding that GPU atomics leave free.
  expect_numbers_close(together_a["result"], alone_a["result"], 1e-4, "a");
  expect_numbers_close(together_b["result"], alone_b["result"], 1e-4, "b");
  // They ran side by side, on different executors.
  EXPECT_NE(together_a["plan"]["executors"], together_b["plan"]["executors"]);
}

TEST_F(Concurrency, ARunTheClusterCanNeverServeFailsAtOnceWithTheReason) {
  const size_t n = executor_count(c_);
  json body = sum_body();
  body["executors"] = {{"min", n + 1}};
  const auto t0 = Clock::now();
  auto r = c_.post("/runtime/" + sum_ + "?wait=1", body.dump());
  ASSERT_TRUE(r.ok());
  json rec = json::parse(r->body, nullptr, false);
  EXPECT_EQ(rec["status"], "failed") << r->body;
  EXPECT_NE(rec.value("error", "").find("needs " + std::to_string(n + 1) + " executor(s)"),
            std::string::npos)
      << r->body;
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));

  for (const json& bad :
       {json(0), json("two"), json({{"min", 3}, {"max", 2}}), json({{"least", 1}})}) {
    json b = sum_body();
    b["executors"] = bad;
    auto refused = c_.post("/runtime/" + sum_, b.dump());
    ASSERT_TRUE(refused.ok());
    EXPECT_EQ(refused->status, 400) << bad.dump() << " -> " << refused->body;
    EXPECT_NE(refused->body.find("`executors` must be"), std::string::npos) << refused->body;
  }
}

TEST_F(Concurrency, ManyOneExecutorRunsAllFinish) {
  std::vector<std::string> ids;
  for (int i = 0; i < 24; ++i) ids.push_back(submit_run(c_, sum_, sum_body()));
  for (const auto& id : ids) {
    json rec = wait_until_finished(c_, id, 120);
    ASSERT_EQ(rec["status"], "done") << rec.dump(2);
    EXPECT_EQ(rec["result"]["aggregate"]["sums"], json({4.5, 6.5}));
    EXPECT_EQ(rec["result"]["aggregate"]["count"], 2);
  }
}

}  // namespace
}  // namespace lizard
