// A worker that speaks the wire protocol from inside the test, so that what
// it reports is under the test's control: the server must plan runs with the
// free memory a worker reports after it joined, not with what it had then.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

#include "fake_worker.h"
#include "local_cluster.h"

namespace lizard {
namespace {

using nlohmann::json;

constexpr uint64_t kGiB = uint64_t{1} << 30;

// A CPU executor with `free_memory` free of 8 GiB.
ExecutorInfo cpu_executor(uint64_t free_memory) {
  ExecutorInfo e;
  e.kind = "cpu";
  e.name = "fake";
  e.sm_count = 2;
  e.weight = 2;
  e.total_memory = 8 * kGiB;
  e.free_memory = free_memory;
  return e;
}

uint64_t reported_free_memory(const LocalCluster& c) {
  auto r = c.get("/clients");
  if (!r.ok()) return 0;
  json clients = json::parse(r->body, nullptr, false);
  if (!clients.is_array() || clients.empty()) return 0;
  return clients[0]["hardware"]["executors"][0].value("free_memory", uint64_t{0});
}

TEST(Resources, PlansUseTheFreeMemoryWorkersReportLater) {
  LocalCluster c;
  ASSERT_TRUE(c.start(0).ok());
  FakeWorker worker(c.port(), "fake", {cpu_executor(4 * kGiB)});
  ASSERT_TRUE(c.wait_for_workers(1).ok());
  EXPECT_EQ(reported_free_memory(c), 4 * kGiB);
  auto loaded = c.load_program(LIZARD_SOURCE_DIR "/examples/sum");
  ASSERT_EQ(loaded.exit_code, 0) << loaded.output;
  const std::string hash = printed_checksum(loaded);

  worker.send(MessageType::kResources, {{"free_memory", {uint64_t{1} << 20}}});
  for (int i = 0; i < 250 && reported_free_memory(c) != (uint64_t{1} << 20); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(reported_free_memory(c), uint64_t{1} << 20);

  // 1,000 rows of 2 float64 would fit the 4 GiB the worker joined with, but
  // not the 1 MiB it has now: the run fails before anything is sent.
  json values = json::array();
  for (int i = 0; i < 1000; ++i) values.push_back({i, 1});
  json body = {{"params", {{"dims", 2}}}, {"dataset", {{"values", {{"values", values}}}}}};
  auto r = c.post("/runtime/" + hash + "?wait=1", body.dump());
  ASSERT_TRUE(r.ok());
  json rec = json::parse(r->body);
  EXPECT_EQ(rec.value("status", ""), "failed") << r->body;
  EXPECT_NE(rec.value("error", "").find("does not fit"), std::string::npos) << r->body;
  EXPECT_EQ(rec.value("iterations", -1), 0);
}

}  // namespace
}  // namespace lizard
