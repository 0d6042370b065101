// RunFoldTree: one attempt's fold tree (plan/fold_tree.h) as the server
// drives it — the place each worker's run_start gives it, and the workers
// whose results reach the server.  Workers are grouped by the address they
// connect from (one host, one address), in plan order; a run folds along a
// tree only when it has more workers than the fan-in, built-in reducers,
// and every worker takes fold links.
//
//   RunFoldTree t = RunFoldTree::plan(participants, addresses, 16, 150);
//   if (t.used()) start.fold = t.place_of("w7");
//   collect from t.senders();   // each folds t.workers_of(sender) workers' results
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "protocol/messages.h"

namespace lizard {

class RunFoldTree {
 public:
  // `addresses[i]`: where participants[i] takes fold links (ip:port), "" for
  // none.  `wait_s`: how long a worker waits for a child's result.
  static RunFoldTree plan(const std::vector<std::string>& participants,
                          const std::vector<std::string>& addresses, int fan_in, double wait_s);

  bool used() const { return !places_.empty(); }
  // The place of `worker` (empty when the tree is not used).
  FoldPlace place_of(const std::string& worker) const;
  // The workers whose results reach the server, in fold order; all
  // participants, in their order, when the tree is not used.
  const std::vector<std::string>& senders() const { return senders_; }
  // How many workers' results `sender`'s result folds.
  int64_t workers_of(const std::string& sender) const;

 private:
  RunFoldTree() = default;  // plan() makes them: a tree always names its senders
  std::map<std::string, FoldPlace> places_;
  std::vector<std::string> senders_;
};

}  // namespace lizard
