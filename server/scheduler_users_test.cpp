// Scheduler with several users: the least recent user goes first, a quota
// caps the executors a user's runs hold, and a run left waiting for either
// says why.
#include <gtest/gtest.h>

#include "server/scheduler.h"
#include "server/usage_ledger.h"

namespace lizard {
namespace {

WorkerView workers_of(int executors) {
  WorkerView w;
  w.id = "w1";
  w.executors.resize(static_cast<size_t>(executors));
  w.ready = {"p"};
  return w;
}

PendingRun run_of(const std::string& id, const std::string& owner, int64_t max = 1) {
  PendingRun r{id, "p", 1, max};
  r.owner = owner;
  return r;
}

bool placed(const SchedulePass& p, const std::string& id) {
  for (const auto& pl : p.placements)
    if (pl.run_id == id) return true;
  return false;
}

TEST(SchedulerUsers, TheUserWhoUsedLessLatelyGoesFirst) {
  // Alice's map of three runs came first; bob's one run comes after it.
  const std::vector<PendingRun> queue = {run_of("a1", "alice"), run_of("a2", "alice"),
                                         run_of("a3", "alice"), run_of("b1", "bob")};
  std::map<std::string, UserShare> users;
  users["alice"].recent_usage = 900;
  users["bob"].recent_usage = 10;
  auto pass = Scheduler().schedule(queue, {workers_of(2)}, users);
  EXPECT_TRUE(placed(pass, "b1"));
  EXPECT_TRUE(placed(pass, "a1"));
  EXPECT_FALSE(placed(pass, "a2"));  // alice's own in her order
  EXPECT_NE(pass.waiting["a2"].find("alice has used more than their share"), std::string::npos)
      << pass.waiting["a2"];
  EXPECT_NE(pass.waiting["a2"].find("for bob"), std::string::npos);
  // Without users (one token), submission order as before.
  pass = Scheduler().schedule(queue, {workers_of(2)});
  EXPECT_TRUE(placed(pass, "a1"));
  EXPECT_TRUE(placed(pass, "a2"));
  EXPECT_FALSE(placed(pass, "b1"));
  EXPECT_TRUE(pass.waiting.empty());
}

TEST(SchedulerUsers, PriorityOrdersAUsersOwnRunsOnly) {
  std::vector<PendingRun> queue = {run_of("a1", "alice"), run_of("b1", "bob"),
                                   run_of("a2", "alice"), run_of("b2", "bob")};
  queue[2].priority = 5;  // alice's second before her first
  queue[3].priority = 9;  // bob's too; but not ahead of alice's
  std::map<std::string, UserShare> users;
  users["alice"].recent_usage = 0;
  users["bob"].recent_usage = 0;
  auto pass = Scheduler().schedule(queue, {workers_of(2)}, users);
  EXPECT_TRUE(placed(pass, "a2"));
  EXPECT_TRUE(placed(pass, "b2"));
  EXPECT_FALSE(placed(pass, "a1"));
  EXPECT_FALSE(placed(pass, "b1"));
  pass = Scheduler().schedule(queue, {workers_of(1)}, users);  // a2 holds a1's place, first
  EXPECT_TRUE(placed(pass, "a2"));
  EXPECT_FALSE(placed(pass, "b2"));
}

TEST(SchedulerUsers, AQuotaCapsTheExecutorsAUsersRunsHold) {
  std::map<std::string, UserShare> users;
  users["alice"].max_executors = 3;
  users["alice"].held = 1;
  // A run taking every free executor gets the two left of the quota.
  auto pass = Scheduler().schedule({run_of("a1", "alice", 0), run_of("b1", "bob", 0)},
                                   {workers_of(8)}, users);
  ASSERT_EQ(pass.placements.size(), 2u);
  EXPECT_EQ(pass.placements[0].executors.size(), 2u);
  EXPECT_EQ(pass.placements[1].run_id, "b1");
  EXPECT_EQ(pass.placements[1].executors.size(), 6u);
  // At the quota, the next waits, saying so, and does not hold up bob.
  users["alice"].held = 3;
  pass = Scheduler().schedule({run_of("a2", "alice"), run_of("b2", "bob")}, {workers_of(8)}, users);
  EXPECT_FALSE(placed(pass, "a2"));
  EXPECT_TRUE(placed(pass, "b2"));
  EXPECT_EQ(pass.waiting["a2"], "user quota of 3 executors reached (alice's runs hold 3)");
}

TEST(UsageLedger, CountsExecutorSecondsThatFadeWithTheHalfLife) {
  UsageLedger ledger(100);
  const auto t0 = UsageLedger::Clock::now();
  ledger.advance({{"alice", 4}}, t0);
  ledger.advance({}, t0 + std::chrono::seconds(10));  // alice held 4 for 10 s
  EXPECT_NEAR(ledger.recent("alice"), 40, 1e-9);
  EXPECT_EQ(ledger.recent("bob"), 0);
  ledger.advance({}, t0 + std::chrono::seconds(110));  // a half-life later
  EXPECT_NEAR(ledger.recent("alice"), 20, 1e-6);
  EXPECT_NEAR(ledger.totals().at("alice"), 40, 1e-9);  // the total does not fade
}

}  // namespace
}  // namespace lizard
