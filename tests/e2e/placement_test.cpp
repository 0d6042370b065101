// Where runs go, end to end: `gpus` and `min_free_memory` in run requests
// against real CPU workers (errors and behaviour), the load that GPU workers
// report reaching GET /clients, and a run placed on the least loaded GPU of
// two (fake GPU workers speaking the wire protocol from the test).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <tuple>

#include "fake_worker.h"
#include "local_cluster.h"
#include "net/http_client.h"

namespace lizard {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kGiB = uint64_t{1} << 30;

json sum_body(json extra) {
  json body = {{"params", {{"dims", 2}}},
               {"dataset", {{"values", {{"values", {{1.5, 2.5}, {3.0, 4.0}, {5.5, -1.0}}}}}}}};
  body.update(extra);
  return body;
}

class PlacementOnCpuWorkers : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(c_.start(1, {"--backend", "cpu", "--cpu-threads", "1"}).ok());
    sum_ = register_program(c_, LIZARD_SOURCE_DIR "/examples/sum");
    ASSERT_FALSE(sum_.empty());
  }
  Result<HttpReply> post_run(const json& extra) const {
    return c_.post("/runtime/" + sum_ + "?wait=1", sum_body(extra).dump());
  }
  LocalCluster c_;
  std::string sum_;
};

TEST_F(PlacementOnCpuWorkers, MalformedDemandsAre400WithTheKey) {
  const std::pair<json, std::string> cases[] = {
      {{{"gpus", 1}, {"executors", 1}}, "give `executors` or `gpus`, not both"},
      {{{"gpus", 0}}, "`gpus` must be a positive integer"},
      {{{"gpus", {{"min", 2}, {"max", 1}}}}, "`gpus` must be a positive integer"},
      {{{"min_free_memory", "8GiB"}}, "`min_free_memory` must be a number of bytes"},
      {{{"min_free_memory", -1}}, "`min_free_memory` must be a number of bytes"},
  };
  for (const auto& [extra, message] : cases) {
    auto r = post_run(extra);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 400) << extra.dump() << ": " << r->body;
    EXPECT_NE(r->body.find(message), std::string::npos) << extra.dump() << ": " << r->body;
  }
}

TEST_F(PlacementOnCpuWorkers, AGpuRunOnCpuWorkersFailsAtOnceWithTheReason) {
  const auto t0 = Clock::now();
  auto r = post_run({{"gpus", 1}});
  ASSERT_TRUE(r.ok());
  json rec = json::parse(r->body);
  EXPECT_EQ(rec.value("status", ""), "failed") << r->body;
  EXPECT_NE(rec.value("error", "").find("needs 1 GPU(s)"), std::string::npos) << r->body;
  EXPECT_EQ(rec["executors_requested"], json({{"min", 1}, {"max", 1}, {"gpus", true}}));
  // At once: not after --worker-wait (60 s).
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(10));
}

TEST_F(PlacementOnCpuWorkers, MinFreeMemoryRunsWithinWhatWorkersHaveAndFailsBeyond) {
  auto r = post_run({{"min_free_memory", 1 << 20}});
  ASSERT_TRUE(r.ok());
  json rec = json::parse(r->body);
  ASSERT_EQ(rec.value("status", ""), "done") << r->body;
  EXPECT_EQ(rec["result"]["aggregate"]["sums"], json({10.0, 5.5}));
  EXPECT_EQ(rec["executors_requested"]["min_free_memory"], 1 << 20);

  // More than any executor has in all (1 PiB): refused at once.
  r = post_run({{"min_free_memory", uint64_t{1} << 50}});
  ASSERT_TRUE(r.ok());
  rec = json::parse(r->body);
  EXPECT_EQ(rec.value("status", ""), "failed") << r->body;
  EXPECT_NE(rec.value("error", "").find("with 1048576.0 GiB free"), std::string::npos) << r->body;
}

TEST_F(PlacementOnCpuWorkers, CpuExecutorsReportNoGpuLoad) {
  json clients = get_json(c_, "/clients");
  ASSERT_EQ(clients.size(), 1u);
  const json& e = clients[0]["hardware"]["executors"][0];
  EXPECT_EQ(e.value("kind", ""), "cpu");
  EXPECT_GT(e.value("free_memory", uint64_t{0}), 0u);
  EXPECT_FALSE(e.contains("utilization")) << e.dump();
  EXPECT_FALSE(e.contains("launch_delay_us")) << e.dump();
}

ExecutorInfo fake_gpu() {
  ExecutorInfo e;
  e.kind = "cuda";
  e.name = "fake GPU";
  e.arch = "sm_90";
  e.sm_count = 132;
  e.clock_khz = 1980000;
  e.weight = 261;
  e.total_memory = 80 * kGiB;
  e.free_memory = 70 * kGiB;
  return e;
}

// The id GET /clients gives the worker with this hostname, and its first executor.
std::pair<std::string, json> client_named(const LocalCluster& c, const std::string& host) {
  for (const auto& w : get_json(c, "/clients"))
    if (w["hardware"].value("hostname", "") == host)
      return {w.value("id", ""), w["hardware"]["executors"][0]};
  return {"", json()};
}

// Polls GET /runtimes/<id> until the run holds executors.
json placed_run(const LocalCluster& c, const std::string& id) {
  json rec;
  for (auto end = Clock::now() + std::chrono::seconds(20); Clock::now() < end;) {
    rec = get_json(c, "/runtimes/" + id);
    if (rec.contains("executors") || rec.value("status", "") == "failed") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return rec;
}

TEST(Placement, RunsGoToTheLeastLoadedGpuTheWorkersReport) {
  LocalCluster c;
  ASSERT_TRUE(c.start(0).ok());
  FakeWorker busy(c.port(), "busy-node", {fake_gpu()});
  FakeWorker idle(c.port(), "idle-node", {fake_gpu()});
  ASSERT_TRUE(c.wait_for_workers(2).ok());
  const std::string hash = register_program(c, LIZARD_SOURCE_DIR "/examples/sum");
  ASSERT_FALSE(hash.empty());

  // Before any report the two are alike; then one reports itself busy.
  busy.send(MessageType::kResources,
            {{"free_memory", {70 * kGiB}}, {"utilization", {93.0}}, {"launch_delay_us", {850.0}}});
  idle.send(MessageType::kResources,
            {{"free_memory", {70 * kGiB}}, {"utilization", {2.0}}, {"launch_delay_us", {6.5}}});
  // The two reports come over two connections: either may be seen first.
  json busy_gpu, idle_gpu;
  std::string idle_id;
  for (auto end = Clock::now() + std::chrono::seconds(10); Clock::now() < end;) {
    busy_gpu = client_named(c, "busy-node").second;
    std::tie(idle_id, idle_gpu) = client_named(c, "idle-node");
    if (busy_gpu.value("utilization", -1.0) == 93.0 && idle_gpu.value("utilization", -1.0) == 2.0)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(busy_gpu.value("utilization", -1.0), 93.0) << busy_gpu.dump();
  EXPECT_EQ(busy_gpu.value("launch_delay_us", -1.0), 850.0);
  EXPECT_EQ(idle_gpu.value("utilization", -1.0), 2.0) << idle_gpu.dump();

  // The fake workers never load the rows: the test looks at the placement
  // and cancels the run.
  const std::string id = submit_run(c, hash, sum_body({{"gpus", 1}}));
  ASSERT_FALSE(id.empty());
  json rec = placed_run(c, id);
  ASSERT_TRUE(rec.contains("executors")) << rec.dump();
  EXPECT_EQ(rec["executors"], json::parse(R"([{"executor": 0, "worker": ")" + idle_id + "\"}]"));
  http_request("DELETE", c.uri() + "/runtimes/" + id, "", "", 30);

  // The loads swap: the next run goes to the other worker (once the
  // cancelled run has let go of its GPU, so that both are free).
  ASSERT_EQ(wait_until_finished(c, id, 20).value("status", ""), "cancelled");
  for (auto end = Clock::now() + std::chrono::seconds(10); Clock::now() < end;) {
    if (client_named(c, "idle-node").second["run"].is_null()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(client_named(c, "idle-node").second["run"].is_null());
  busy.send(MessageType::kResources, {{"free_memory", {70 * kGiB}}, {"utilization", {0.0}}});
  idle.send(MessageType::kResources, {{"free_memory", {70 * kGiB}}, {"utilization", {88.0}}});
  for (auto end = Clock::now() + std::chrono::seconds(10); Clock::now() < end;) {
    if (client_named(c, "idle-node").second.value("utilization", -1.0) == 88.0 &&
        client_named(c, "busy-node").second.value("utilization", -1.0) == 0.0)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const std::string next = submit_run(c, hash, sum_body({{"gpus", 1}}));
  ASSERT_FALSE(next.empty());
  rec = placed_run(c, next);
  ASSERT_TRUE(rec.contains("executors")) << rec.dump();
  EXPECT_EQ(rec["executors"][0].value("worker", ""), client_named(c, "busy-node").first);
  http_request("DELETE", c.uri() + "/runtimes/" + next, "", "", 30);
}

}  // namespace
}  // namespace lizard
