// FoldTree: the order in which a run's partial aggregates are folded when
// its workers fold among themselves before the server does, planned as a
// pure function of the run's workers (in plan order), the host each runs
// on, and a fan-in.  Workers on one host fold there first: the host's first
// worker takes the others' aggregates.  The hosts' folders then fold in
// groups of `fan_in` (the group's first takes the rest), and those groups'
// folders again, level by level, until at most `fan_in` remain: those send
// to the server.  So no folder takes more than fan_in - 1 aggregates at one
// level, and N workers on N hosts send the server at most ceil(N / fan_in).
//
// Each folder folds its own aggregate first, then its children's, in the
// order of `children`; the server folds the roots in the order of `roots`.
// The order is fixed by the inputs, so a run's answer is the same run to
// run, also in floating point (it differs from a flat fold's rounding).  A
// worker lost mid-run is handled by planning again over those that remain.
//
//   FoldTree t = plan_fold_tree({{"w1", "a"}, {"w2", "a"}, {"w3", "b"}}, 16);
//   t.nodes[1].parent;   // 0: w2 folds into w1, on host a
//   t.roots;             // {0, 2}: w1 and w3 send to the server
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace lizard {

struct FoldMember {
  std::string worker_id;
  std::string host;  // workers of one host fold there first
};

struct FoldNode {
  int parent = -1;            // the member this one sends to; -1: the server
  std::vector<int> children;  // whose aggregates it folds, after its own, in this order
};

struct FoldTree {
  std::vector<FoldNode> nodes;  // one per member, in the members' order
  std::vector<int> roots;       // the members that send to the server, in fold order
  // How many workers' aggregates member `i` sends (itself and all below it).
  size_t covered(int i) const;
  // Every member in the order its aggregate enters the fold.
  std::vector<int> fold_order() const;
};

// `fan_in` < 2 plans no tree: every member sends to the server.
FoldTree plan_fold_tree(const std::vector<FoldMember>& members, int fan_in);

}  // namespace lizard
