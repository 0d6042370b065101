#include "server/run_fold_tree.h"

#include "plan/fold_tree.h"

namespace lizard {

RunFoldTree RunFoldTree::plan(const std::vector<std::string>& participants,
                              const std::vector<std::string>& addresses, int fan_in,
                              double wait_s) {
  RunFoldTree t;
  t.senders_ = participants;
  if (fan_in < 2 || participants.size() <= static_cast<size_t>(fan_in) ||
      addresses.size() != participants.size())
    return t;
  std::vector<FoldMember> members;
  for (size_t i = 0; i < participants.size(); ++i) {
    const std::string& a = addresses[i];
    if (a.empty()) return t;  // one that takes no links: no tree
    members.push_back({participants[i], a.substr(0, a.rfind(':'))});
  }
  const FoldTree tree = plan_fold_tree(members, fan_in);
  if (tree.roots.size() == participants.size()) return t;
  t.senders_.clear();
  for (int r : tree.roots) t.senders_.push_back(participants[static_cast<size_t>(r)]);
  for (size_t i = 0; i < participants.size(); ++i) {
    const FoldNode& n = tree.nodes[i];
    FoldPlace p;
    if (n.parent >= 0) {
      p.parent_id = participants[static_cast<size_t>(n.parent)];
      p.parent_address = addresses[static_cast<size_t>(n.parent)];
    }
    for (int c : n.children) p.children.push_back(participants[static_cast<size_t>(c)]);
    p.wait_s = wait_s;
    p.workers = static_cast<int64_t>(tree.covered(static_cast<int>(i)));
    t.places_[participants[i]] = std::move(p);
  }
  return t;
}

FoldPlace RunFoldTree::place_of(const std::string& worker) const {
  auto it = places_.find(worker);
  return it == places_.end() ? FoldPlace{} : it->second;
}

int64_t RunFoldTree::workers_of(const std::string& sender) const {
  auto it = places_.find(sender);
  return it == places_.end() ? 1 : it->second.workers;
}

}  // namespace lizard
