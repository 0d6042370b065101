// GPU load in /metrics: utilisation and launch delay for the executors whose
// workers measured them, nothing for the others (the CPU backend).
#include <gtest/gtest.h>

#include <map>

#include "common/metrics_text.h"
#include "server/server_metrics.h"
#include "server/worker_registry.h"

namespace lizard {
namespace {

class DropLink : public WorkerLink {
 public:
  void send(OutgoingFrame) override {}
  size_t queued_bytes() const override { return 0; }
  void close() override {}
  std::string peer() const override { return "127.0.0.1:1"; }
};

TEST(ServerMetricsLoad, GpuLoadIsExportedWhereMeasured) {
  WorkerRegistry workers;
  ServerMetrics metrics(&workers, nullptr);
  HelloMsg h;
  h.hostname = "node3";
  for (const char* kind : {"cuda", "cpu"}) {
    ExecutorInfo e;
    e.kind = kind;
    h.executors.push_back(e);
  }
  const std::string id = workers.connect(std::make_shared<DropLink>());
  ASSERT_TRUE(workers.hello(id, h, {}));
  ResourcesMsg r;
  r.free_memory = {1, 2};
  r.utilization = {45, -1};
  r.launch_delay_us = {12.5, -1};
  workers.resources(id, r);

  auto m = parse_metrics_text(metrics.render());
  ASSERT_TRUE(m.ok()) << m.status().message();
  const std::map<std::string, std::string> gpu = {{"worker", "node3/gpu0"}, {"executor", "0"}};
  const std::map<std::string, std::string> cpu = {{"worker", "node3/cpu1"}, {"executor", "1"}};
  EXPECT_DOUBLE_EQ(m->value("lizard_executor_utilization_ratio", gpu).value_or(-1), 0.45);
  EXPECT_DOUBLE_EQ(m->value("lizard_executor_launch_delay_seconds", gpu).value_or(-1), 12.5e-6);
  EXPECT_FALSE(m->value("lizard_executor_utilization_ratio", cpu).has_value());
  EXPECT_FALSE(m->value("lizard_executor_launch_delay_seconds", cpu).has_value());
}

}  // namespace
}  // namespace lizard
