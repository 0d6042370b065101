#include "plan/fold_tree.h"

#include <map>
#include <utility>

namespace lizard {
namespace {

// Folds `group` into its first member: the others become its children.
void fold_into_first(const std::vector<int>& group, FoldTree* t) {
  for (size_t k = 1; k < group.size(); ++k) {
    t->nodes[group[k]].parent = group.front();
    t->nodes[group.front()].children.push_back(group[k]);
  }
}

// Groups of at most `fan_in` consecutive members of `level`, each folded
// into its first; the firsts, in order.
std::vector<int> fold_level(const std::vector<int>& level, size_t fan_in, FoldTree* t) {
  std::vector<int> next;
  for (size_t start = 0; start < level.size(); start += fan_in) {
    const size_t end = std::min(level.size(), start + fan_in);
    const std::vector<int> group(level.begin() + static_cast<long>(start),
                                 level.begin() + static_cast<long>(end));
    fold_into_first(group, t);
    next.push_back(group.front());
  }
  return next;
}

void append_fold_order(const FoldTree& t, int i, std::vector<int>* out) {
  out->push_back(i);
  for (int child : t.nodes[i].children) append_fold_order(t, child, out);
}

}  // namespace

size_t FoldTree::covered(int i) const {
  size_t n = 1;
  for (int child : nodes[i].children) n += covered(child);
  return n;
}

std::vector<int> FoldTree::fold_order() const {
  std::vector<int> out;
  for (int root : roots) append_fold_order(*this, root, &out);
  return out;
}

FoldTree plan_fold_tree(const std::vector<FoldMember>& members, int fan_in) {
  FoldTree t;
  t.nodes.resize(members.size());
  std::vector<int> level;
  if (fan_in < 2) {
    for (size_t i = 0; i < members.size(); ++i) t.roots.push_back(static_cast<int>(i));
    return t;
  }
  const size_t f = static_cast<size_t>(fan_in);
  // Each host's workers, hosts in the order their first worker comes.
  std::vector<std::vector<int>> hosts;
  std::map<std::string, size_t> host_index;
  for (size_t i = 0; i < members.size(); ++i) {
    auto [it, added] = host_index.emplace(members[i].host, hosts.size());
    if (added) hosts.emplace_back();
    hosts[it->second].push_back(static_cast<int>(i));
  }
  // On each host, levels of fan_in until one folder is left.
  for (std::vector<int> on_host : hosts) {
    while (on_host.size() > 1) on_host = fold_level(on_host, f, &t);
    level.push_back(on_host.front());
  }
  // Across hosts, levels of fan_in until the server takes at most fan_in.
  while (level.size() > f) level = fold_level(level, f, &t);
  t.roots = std::move(level);
  return t;
}

}  // namespace lizard
