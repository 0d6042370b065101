// What GET /clients shows of a worker's own report: the Slurm job once,
// beside the id, and its executors' load as the latest resources report said.
#include <gtest/gtest.h>

#include "server/worker_registry.h"

namespace lizard {
namespace {

class SilentLink : public WorkerLink {
 public:
  void send(OutgoingFrame) override {}
  size_t queued_bytes() const override { return 0; }
  void close() override {}
  std::string peer() const override { return "10.0.0.7:4242"; }
};

TEST(WorkerRegistryView, NamesTheSlurmJobOnceAndShowsTheLatestLoad) {
  WorkerRegistry workers;
  HelloMsg h;
  h.hostname = "gpu17";
  h.slurm_job_id = "4211";
  ExecutorInfo e;
  e.kind = "cuda";
  e.free_memory = 100;
  h.executors.push_back(e);
  const std::string id = workers.connect(std::make_shared<SilentLink>());
  ASSERT_TRUE(workers.hello(id, h, {}));
  auto j = workers.to_json(id);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["slurm_job_id"], "4211");
  EXPECT_FALSE((*j)["hardware"].contains("slurm_job_id")) << j->dump();
  EXPECT_FALSE(j->contains("resources_at"));

  ResourcesMsg r;
  r.free_memory = {50};
  r.utilization = {61};
  r.launch_delay_us = {9.5};
  workers.resources(id, r);
  j = workers.to_json(id);
  const auto& gpu = (*j)["hardware"]["executors"][0];
  EXPECT_EQ(gpu["free_memory"], 50);
  EXPECT_EQ(gpu["utilization"], 61.0);
  EXPECT_EQ(gpu["launch_delay_us"], 9.5);
  EXPECT_TRUE(j->contains("resources_at"));
  const WorkerView v = workers.view().at(0);
  EXPECT_EQ(v.executors.at(0).kind, "cuda");
  EXPECT_EQ(v.executors.at(0).utilization, 61.0);
  EXPECT_EQ(v.executors.at(0).free_memory, 50u);
}

}  // namespace
}  // namespace lizard
