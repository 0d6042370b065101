#include "plan/fold_tree.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace lizard {
namespace {

// `n` workers, `per_host` to a host, in plan order.
std::vector<FoldMember> workers(int n, int per_host = 1) {
  std::vector<FoldMember> m;
  for (int i = 0; i < n; ++i)
    m.push_back({"w" + std::to_string(i), "host" + std::to_string(i / per_host)});
  return m;
}

// Every member reaches the server exactly once, through parents that list it
// as a child, with no cycle; at most `fan_in` - 1 children per level.
void expect_well_formed(const FoldTree& t, size_t members) {
  ASSERT_EQ(t.nodes.size(), members);
  std::vector<int> order = t.fold_order();
  ASSERT_EQ(order.size(), members);
  std::set<int> seen(order.begin(), order.end());
  EXPECT_EQ(seen.size(), members);
  size_t covered = 0;
  for (int r : t.roots) {
    EXPECT_EQ(t.nodes[r].parent, -1);
    covered += t.covered(r);
  }
  EXPECT_EQ(covered, members);
  for (size_t i = 0; i < members; ++i)
    for (int c : t.nodes[i].children) EXPECT_EQ(t.nodes[c].parent, static_cast<int>(i));
}

TEST(FoldTree, AFanInBelowTwoPlansNoTree) {
  for (int fan_in : {0, 1}) {
    FoldTree t = plan_fold_tree(workers(5), fan_in);
    EXPECT_EQ(t.roots, (std::vector<int>{0, 1, 2, 3, 4}));
    for (const FoldNode& n : t.nodes) EXPECT_TRUE(n.children.empty());
  }
}

TEST(FoldTree, AsManyWorkersAsTheFanInSendToTheServerThemselves) {
  FoldTree t = plan_fold_tree(workers(16), 16);
  expect_well_formed(t, 16);
  EXPECT_EQ(t.roots.size(), 16u);
}

// What the server receives per iteration: at most 256 / fan-in frames.
TEST(FoldTree, TwoHundredFiftySixWorkersSendTheServerAtMostTheirNumberOverTheFanIn) {
  for (int fan_in : {2, 4, 16, 64}) {
    SCOPED_TRACE(fan_in);
    FoldTree t = plan_fold_tree(workers(256), fan_in);
    expect_well_formed(t, 256);
    EXPECT_LE(t.roots.size(), 256u / fan_in);
    EXPECT_LE(t.roots.size(), static_cast<size_t>(fan_in));
  }
}

TEST(FoldTree, UnevenCountsFoldEveryWorkerOnce) {
  for (int n : {1, 2, 3, 17, 33, 100, 1000, 4097}) {
    SCOPED_TRACE(n);
    FoldTree t = plan_fold_tree(workers(n), 16);
    expect_well_formed(t, static_cast<size_t>(n));
    EXPECT_LE(t.roots.size(), 16u);
  }
}

TEST(FoldTree, NoFolderTakesMoreThanTheFanInAtOneLevel) {
  // 4,096 workers at fan-in 16: two levels, so a folder takes at most 15
  // children at each of them.
  FoldTree t = plan_fold_tree(workers(4096), 16);
  expect_well_formed(t, 4096);
  EXPECT_EQ(t.roots.size(), 16u);
  size_t most = 0;
  for (const FoldNode& n : t.nodes) most = std::max(most, n.children.size());
  EXPECT_LE(most, 2u * 15u);
}

TEST(FoldTree, WorkersOfOneHostFoldThereFirst) {
  // Four workers on each of three hosts, listed host by host.
  FoldTree t = plan_fold_tree(workers(12, 4), 16);
  expect_well_formed(t, 12);
  EXPECT_EQ(t.roots, (std::vector<int>{0, 4, 8}));
  EXPECT_EQ(t.nodes[0].children, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(t.nodes[4].children, (std::vector<int>{5, 6, 7}));
  // Listed interleaved (the plan's order need not follow hosts): still by host.
  std::vector<FoldMember> m;
  for (int i = 0; i < 6; ++i) m.push_back({"w" + std::to_string(i), i % 2 ? "b" : "a"});
  FoldTree u = plan_fold_tree(m, 16);
  expect_well_formed(u, 6);
  EXPECT_EQ(u.roots, (std::vector<int>{0, 1}));
  EXPECT_EQ(u.nodes[0].children, (std::vector<int>{2, 4}));
  EXPECT_EQ(u.nodes[1].children, (std::vector<int>{3, 5}));
}

TEST(FoldTree, TheFoldOrderIsTheSameEveryTimeAndStartsWithEachFoldersOwn) {
  const auto m = workers(40, 3);
  FoldTree a = plan_fold_tree(m, 4), b = plan_fold_tree(m, 4);
  EXPECT_EQ(a.fold_order(), b.fold_order());
  expect_well_formed(a, 40);
  const std::vector<int> order = a.fold_order();
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const auto at = std::find(order.begin(), order.end(), static_cast<int>(i));
    for (int c : a.nodes[i].children)
      EXPECT_LT(at, std::find(order.begin(), order.end(), c)) << i << " before its child " << c;
  }
}

TEST(FoldTree, APlanAfterALossCoversTheWorkersLeft) {
  auto m = workers(64, 4);
  FoldTree before = plan_fold_tree(m, 4);
  // The folder of the first host is lost: the others plan again without it.
  m.erase(m.begin());
  FoldTree after = plan_fold_tree(m, 4);
  expect_well_formed(after, 63);
  EXPECT_EQ(after.nodes[0].parent, -1);  // w1 now folds host0
  const std::vector<int>& children = after.nodes[0].children;
  ASSERT_GE(children.size(), 2u);
  EXPECT_EQ(std::vector<int>(children.begin(), children.begin() + 2), (std::vector<int>{1, 2}));
  EXPECT_LE(after.roots.size(), 4u);
  EXPECT_LE(before.roots.size(), 4u);
}

}  // namespace
}  // namespace lizard
