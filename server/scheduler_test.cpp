#include "server/scheduler.h"

#include <gtest/gtest.h>

#include <random>

namespace lizard {
namespace {

WorkerView worker(const std::string& id, int executors, std::set<std::string> ready = {"p"}) {
  WorkerView w;
  w.id = id;
  w.executors.resize(static_cast<size_t>(executors));
  w.ready = std::move(ready);
  return w;
}

PendingRun run(const std::string& id, int64_t min = 1, int64_t max = 0, int bypassed = 0) {
  return PendingRun{id, "p", min, max, bypassed};
}

const Placement* placed(const SchedulePass& p, const std::string& id) {
  for (const auto& pl : p.placements)
    if (pl.run_id == id) return &pl;
  return nullptr;
}

TEST(Scheduler, OneExecutorRunsGoToDisjointExecutors) {
  auto pass = Scheduler().schedule({run("r1", 1, 1), run("r2", 1, 1), run("r3", 1, 1)},
                                   {worker("w1", 1), worker("w2", 1)});
  ASSERT_EQ(pass.placements.size(), 2u);
  EXPECT_EQ(placed(pass, "r1")->executors, (std::vector<ExecutorRef>{{"w1", 0}}));
  EXPECT_EQ(placed(pass, "r2")->executors, (std::vector<ExecutorRef>{{"w2", 0}}));
  EXPECT_EQ(placed(pass, "r3"), nullptr);
  EXPECT_TRUE(pass.refusals.empty());
}

TEST(Scheduler, ARunWithoutALimitTakesEveryFreeExecutorAndTheNextOneWaits) {
  auto pass = Scheduler().schedule({run("r1"), run("r2")}, {worker("w1", 2), worker("w2", 1)});
  ASSERT_NE(placed(pass, "r1"), nullptr);
  EXPECT_EQ(placed(pass, "r1")->executors.size(), 3u);
  EXPECT_EQ(placed(pass, "r2"), nullptr);
}

TEST(Scheduler, BusyExecutorsAreNotPlacedAgain) {
  WorkerView w = worker("w1", 2);
  w.executors[0].busy = true;
  auto pass = Scheduler().schedule({run("r1")}, {w});
  ASSERT_NE(placed(pass, "r1"), nullptr);
  EXPECT_EQ(placed(pass, "r1")->executors, (std::vector<ExecutorRef>{{"w1", 1}}));
}

TEST(Scheduler, ASmallRunBackfillsAheadOfALargeOneAndCountsTheBypass) {
  WorkerView w = worker("w1", 3);
  w.executors[0].busy = true;
  w.executors[1].busy = true;
  auto pass = Scheduler().schedule({run("big", 2, 2), run("small", 1, 1)}, {w});
  EXPECT_EQ(placed(pass, "big"), nullptr);
  ASSERT_NE(placed(pass, "small"), nullptr);
  EXPECT_EQ(pass.bypassed, std::vector<std::string>{"big"});
}

TEST(Scheduler, ARunBypassedTooOftenHoldsTheExecutorsItCanUse) {
  WorkerView w = worker("w1", 3);
  w.executors[0].busy = true;
  w.executors[1].busy = true;
  Scheduler s({/*max_bypass=*/2});
  auto pass = s.schedule({run("big", 2, 2, /*bypassed=*/2), run("small", 1, 1)}, {w});
  EXPECT_TRUE(pass.placements.empty());
  EXPECT_TRUE(pass.bypassed.empty());
  // Executors the waiting run cannot use stay open to others.
  WorkerView other = worker("w2", 1, {"q"});
  PendingRun q{"q1", "q", 1, 1, 0};
  pass = s.schedule({run("big", 2, 2, 2), q}, {w, other});
  ASSERT_NE(placed(pass, "q1"), nullptr);
  EXPECT_EQ(placed(pass, "q1")->executors, (std::vector<ExecutorRef>{{"w2", 0}}));
}

TEST(Scheduler, AStarvingRunStartsOnceEnoughExecutorsAreFree) {
  Scheduler s({2});
  auto pass = s.schedule({run("big", 2, 2, 5), run("small", 1, 1)}, {worker("w1", 3)});
  ASSERT_NE(placed(pass, "big"), nullptr);
  EXPECT_EQ(placed(pass, "big")->executors.size(), 2u);
  ASSERT_NE(placed(pass, "small"), nullptr);
}

TEST(Scheduler, RunsGoOnlyToWorkersThatBuiltTheirProgram) {
  auto pass = Scheduler().schedule({run("r1")}, {worker("w1", 2, {}), worker("w2", 1)});
  ASSERT_NE(placed(pass, "r1"), nullptr);
  EXPECT_EQ(placed(pass, "r1")->executors, (std::vector<ExecutorRef>{{"w2", 0}}));
}

TEST(Scheduler, AnUnlimitedRunWaitsForBuildsUnderWayALimitedOneDoesNot) {
  WorkerView building = worker("w2", 1, {});
  building.building.insert("p");
  auto pass = Scheduler().schedule({run("all")}, {worker("w1", 1), building});
  EXPECT_TRUE(pass.placements.empty());
  EXPECT_TRUE(pass.refusals.empty());
  pass = Scheduler().schedule({run("one", 1, 1)}, {worker("w1", 1), building});
  ASSERT_NE(placed(pass, "one"), nullptr);
}

TEST(Scheduler, AnUnlimitedRunDoesNotWaitForTheBuildOfAWorkerThatJustJoined) {
  WorkerView joined = worker("w2", 1, {});
  joined.building.insert("p");
  joined.joining.insert("p");
  auto pass = Scheduler().schedule({run("all")}, {worker("w1", 1), joined});
  ASSERT_NE(placed(pass, "all"), nullptr);
  EXPECT_EQ(placed(pass, "all")->executors, (std::vector<ExecutorRef>{{"w1", 0}}));
}

TEST(Scheduler, RefusesRunsTheConnectedWorkersCanNeverServe) {
  auto pass = Scheduler().schedule({run("r1", 3, 3)}, {worker("w1", 1), worker("w2", 1)});
  ASSERT_EQ(pass.refusals.size(), 1u);
  EXPECT_NE(pass.refusals[0].reason.find("needs 3 executor(s)"), std::string::npos)
      << pass.refusals[0].reason;
  EXPECT_NE(pass.refusals[0].reason.find("have 2"), std::string::npos);

  WorkerView broken = worker("w1", 1, {});
  broken.failed["p"] = "kernel.cu(3): error: expected a ';'";
  pass = Scheduler().schedule({run("r2")}, {broken});
  ASSERT_EQ(pass.refusals.size(), 1u);
  EXPECT_NE(pass.refusals[0].reason.find("expected a ';'"), std::string::npos);

  pass = Scheduler().schedule({run("r3")}, {worker("w1", 0)});
  ASSERT_EQ(pass.refusals.size(), 1u);
  EXPECT_NE(pass.refusals[0].reason.find("no connected worker has an executor"), std::string::npos);
}

TEST(Scheduler, WithNoWorkerConnectedRunsWait) {
  auto pass = Scheduler().schedule({run("r1")}, {});
  EXPECT_TRUE(pass.placements.empty());
  EXPECT_TRUE(pass.refusals.empty());
}

TEST(Scheduler, ALimitedRunPrefersTheStrongestExecutors) {
  WorkerView a = worker("w1", 2), b = worker("w2", 1);
  a.executors[0].weight = 1;
  a.executors[1].weight = 5;
  b.executors[0].weight = 3;
  auto pass = Scheduler().schedule({run("r1", 1, 2)}, {a, b});
  ASSERT_NE(placed(pass, "r1"), nullptr);
  EXPECT_EQ(placed(pass, "r1")->executors, (std::vector<ExecutorRef>{{"w1", 1}, {"w2", 0}}));
}

TEST(Scheduler, PlacementsAreDisjointAndWithinEachRunsDemand) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<WorkerView> cluster;
    const int workers = 1 + static_cast<int>(rng() % 4);
    for (int w = 0; w < workers; ++w) {
      WorkerView v = worker("w" + std::to_string(w), static_cast<int>(rng() % 5));
      for (auto& e : v.executors) e.busy = rng() % 3 == 0;
      cluster.push_back(v);
    }
    std::vector<PendingRun> queue;
    for (int r = 0; r < 6; ++r) {
      int64_t min = 1 + static_cast<int64_t>(rng() % 3);
      int64_t max = rng() % 2 ? 0 : min + static_cast<int64_t>(rng() % 2);
      queue.push_back(run("r" + std::to_string(r), min, max, static_cast<int>(rng() % 20)));
    }
    auto pass = Scheduler({8}).schedule(queue, cluster);
    std::set<ExecutorRef> used;
    for (const auto& p : pass.placements) {
      const PendingRun* q = nullptr;
      for (const auto& r : queue)
        if (r.id == p.run_id) q = &r;
      ASSERT_NE(q, nullptr);
      EXPECT_GE(static_cast<int64_t>(p.executors.size()), q->min);
      if (q->max > 0) {
        EXPECT_LE(static_cast<int64_t>(p.executors.size()), q->max);
      }
      for (const auto& e : p.executors) {
        EXPECT_TRUE(used.insert(e).second) << "executor placed twice";
        const WorkerView* w = nullptr;
        for (const auto& v : cluster)
          if (v.id == e.worker_id) w = &v;
        ASSERT_NE(w, nullptr);
        EXPECT_FALSE(w->executors[static_cast<size_t>(e.index)].busy);
      }
    }
  }
}

}  // namespace
}  // namespace lizard
