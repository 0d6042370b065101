// The scheduler's preference for executors that keep a run's rows from an
// earlier run (a later run over the same file or upload): among free
// executors otherwise equal, those go first; the preference never passes
// over the run's demands.
#include <gtest/gtest.h>

#include "server/scheduler.h"

namespace lizard {
namespace {

WorkerView::Executor cpu(std::vector<std::string> kept = {}) {
  WorkerView::Executor e;
  e.kind = "cpu";
  e.weight = 1;
  e.total_memory = uint64_t{24} << 30;
  e.free_memory = uint64_t{20} << 30;
  e.kept = std::move(kept);
  return e;
}

WorkerView node(const std::string& id, std::vector<WorkerView::Executor> executors) {
  WorkerView w;
  w.id = id;
  w.executors = std::move(executors);
  w.ready = {"p"};
  return w;
}

PendingRun over(int64_t n, std::vector<std::string> sources) {
  PendingRun r{"r1", "p", n, n, 0, false, 0};
  r.row_sources = std::move(sources);
  return r;
}

std::vector<ExecutorRef> placement(const SchedulePass& p) {
  return p.placements.empty() ? std::vector<ExecutorRef>{} : p.placements[0].executors;
}

const std::string kFile = "file:2049:77:4096:1700000000000000000:";

TEST(SchedulerLocality, PrefersTheExecutorsThatKeepTheRunsRows) {
  const std::vector<WorkerView> cluster = {
      node("w1", {cpu(), cpu({"u9:0+8x4@0+32"})}),
      node("w2", {cpu({kFile + "npy:float32x8:0+128"}), cpu()})};
  EXPECT_EQ(placement(Scheduler().schedule({over(1, {kFile})}, cluster)),
            (std::vector<ExecutorRef>{{"w2", 0}}));
  EXPECT_EQ(placement(Scheduler().schedule({over(1, {"u9:"})}, cluster)),
            (std::vector<ExecutorRef>{{"w1", 1}}));
  // Both sources' holders first, then the others.
  EXPECT_EQ(placement(Scheduler().schedule({over(2, {kFile, "u9:"})}, cluster)),
            (std::vector<ExecutorRef>{{"w1", 1}, {"w2", 0}}));
}

TEST(SchedulerLocality, WithoutKeptRowsTheOrderIsUnchanged) {
  const std::vector<WorkerView> cluster = {node("w1", {cpu(), cpu({"u9:0+8x4@0+32"})})};
  // Another upload's id that begins with the same characters is not the same source.
  EXPECT_EQ(placement(Scheduler().schedule({over(1, {"u99:"})}, cluster)),
            (std::vector<ExecutorRef>{{"w1", 0}}));
  EXPECT_EQ(placement(Scheduler().schedule({over(1, {})}, cluster)),
            (std::vector<ExecutorRef>{{"w1", 0}}));
}

TEST(SchedulerLocality, ABusyHolderIsPassedOver) {
  std::vector<WorkerView> cluster = {node("w1", {cpu(), cpu({kFile + "raw:int32x1:0+8"})})};
  cluster[0].executors[1].busy = true;
  EXPECT_EQ(placement(Scheduler().schedule({over(1, {kFile})}, cluster)),
            (std::vector<ExecutorRef>{{"w1", 0}}));
}

}  // namespace
}  // namespace lizard
