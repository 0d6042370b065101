// Where the scheduler places a run among free executors: the least loaded
// first, only GPUs for a `gpus` request, only executors with the free memory
// a run asks for; and what it says when no worker can ever meet the request.
#include <gtest/gtest.h>

#include "server/scheduler.h"

namespace lizard {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

WorkerView::Executor gpu(double utilization, uint64_t free = 70 * kGiB, double delay_us = 10) {
  WorkerView::Executor e;
  e.kind = "cuda";
  e.weight = 260;
  e.total_memory = 80 * kGiB;
  e.free_memory = free;
  e.utilization = utilization;
  e.launch_delay_us = delay_us;
  return e;
}

WorkerView::Executor cpu() {
  WorkerView::Executor e;
  e.kind = "cpu";
  e.weight = 260;
  e.total_memory = 24 * kGiB;
  e.free_memory = 20 * kGiB;
  return e;
}

WorkerView node(const std::string& id, std::vector<WorkerView::Executor> executors) {
  WorkerView w;
  w.id = id;
  w.executors = std::move(executors);
  w.ready = {"p"};
  return w;
}

PendingRun want(int64_t n, bool gpus_only = false, uint64_t min_free = 0) {
  return PendingRun{"r1", "p", n, n, 0, gpus_only, min_free};
}

std::vector<ExecutorRef> placement(const SchedulePass& p) {
  return p.placements.empty() ? std::vector<ExecutorRef>{} : p.placements[0].executors;
}

TEST(SchedulerPlacement, TakesTheLeastLoadedGpus) {
  // w1: GPU 0 busy (95 %), GPU 1 idle; w2: GPU 0 at 40 %, GPU 1 idle but its
  // launches wait behind another process's kernels.
  std::vector<WorkerView> cluster = {node("w1", {gpu(95), gpu(0)}),
                                     node("w2", {gpu(40), gpu(0, 70 * kGiB, 2000)})};
  EXPECT_EQ(placement(Scheduler().schedule({want(1)}, cluster)),
            (std::vector<ExecutorRef>{{"w1", 1}}));
  EXPECT_EQ(placement(Scheduler().schedule({want(2)}, cluster)),
            (std::vector<ExecutorRef>{{"w1", 1}, {"w2", 1}}));
  EXPECT_EQ(placement(Scheduler().schedule({want(3)}, cluster)),
            (std::vector<ExecutorRef>{{"w1", 1}, {"w2", 0}, {"w2", 1}}));
}

TEST(SchedulerPlacement, AmongEquallyIdleGpusTheOneWithMoreFreeMemory) {
  std::vector<WorkerView> cluster = {node("w1", {gpu(3, 20 * kGiB), gpu(0, 60 * kGiB)})};
  EXPECT_EQ(placement(Scheduler().schedule({want(1)}, cluster)),
            (std::vector<ExecutorRef>{{"w1", 1}}));
}

TEST(SchedulerPlacement, GpusOnlyLeavesCpuExecutorsOut) {
  std::vector<WorkerView> cluster = {node("w1", {cpu()}), node("w2", {gpu(60)})};
  auto pass = Scheduler().schedule({want(1, /*gpus_only=*/true)}, cluster);
  EXPECT_EQ(placement(pass), (std::vector<ExecutorRef>{{"w2", 0}}));
  // Without the restriction the idle CPU executor is the better choice.
  EXPECT_EQ(placement(Scheduler().schedule({want(1)}, cluster)),
            (std::vector<ExecutorRef>{{"w1", 0}}));
}

TEST(SchedulerPlacement, AGpuRunOnCpuWorkersIsRefusedWithTheReason) {
  auto pass = Scheduler().schedule({want(2, true)}, {node("w1", {cpu()}), node("w2", {cpu()})});
  ASSERT_EQ(pass.refusals.size(), 1u);
  EXPECT_NE(pass.refusals[0].reason.find("needs 2 GPU(s)"), std::string::npos)
      << pass.refusals[0].reason;
  EXPECT_NE(pass.refusals[0].reason.find("have 0 such"), std::string::npos);
}

TEST(SchedulerPlacement, MinFreeMemorySkipsFullGpusAndWaitsForThem) {
  std::vector<WorkerView> cluster = {node("w1", {gpu(0, 2 * kGiB), gpu(90, 50 * kGiB)})};
  // The idle GPU has 2 GiB free: a run asking for 16 GiB takes the busy one.
  EXPECT_EQ(placement(Scheduler().schedule({want(1, false, 16 * kGiB)}, cluster)),
            (std::vector<ExecutorRef>{{"w1", 1}}));
  // Two such GPUs: only one has the memory now, both could (80 GiB each): it waits.
  auto pass = Scheduler().schedule({want(2, false, 16 * kGiB)}, cluster);
  EXPECT_TRUE(pass.placements.empty());
  EXPECT_TRUE(pass.refusals.empty());
}

TEST(SchedulerPlacement, MoreMemoryThanAnyExecutorHasIsRefused) {
  auto pass = Scheduler().schedule({want(1, false, 100 * kGiB)}, {node("w1", {gpu(0), cpu()})});
  ASSERT_EQ(pass.refusals.size(), 1u);
  EXPECT_NE(pass.refusals[0].reason.find("with 100.0 GiB free"), std::string::npos)
      << pass.refusals[0].reason;
}

}  // namespace
}  // namespace lizard
