// OrderedFold: when to fold each of an iteration's results, so that the
// server folds them while the rest are still arriving, and yet always in
// the order of the run's participants.  Results come in any order; each one
// is folded as soon as every result before it has been, so the aggregate is
// bit for bit the one a fold after the last arrival would give (a float sum
// depends on its order), and only the results that arrived ahead of their
// turn wait, not all of them.  Pure bookkeeping: the caller's `fold(k)` does
// the folding.
//
//   OrderedFold order;
//   order.start(participants.size());
//   // for each result k as it arrives:
//   Status st = order.arrived(k, [&](size_t i) { return fold_result(i); });
//   // order.done() once every result is folded
#pragma once

#include <cstddef>
#include <vector>

#include "common/status.h"

namespace lizard {

class OrderedFold {
 public:
  // Expects `count` results, numbered 0 to count - 1; none arrived yet.
  void start(size_t count) {
    arrived_.assign(count, false);
    next_ = 0;
  }
  // Result `k` has arrived: calls fold(i) for k and each later result that
  // is now next in order, in order.  A second arrival of `k` is ignored.
  // Stops at the first fold that fails and returns its error.
  template <typename Fold>
  Status arrived(size_t k, Fold&& fold) {
    if (k >= arrived_.size() || arrived_[k]) return Status::Ok();
    arrived_[k] = true;
    while (next_ < arrived_.size() && arrived_[next_]) {
      LIZARD_RETURN_IF_ERROR(fold(next_));
      ++next_;
    }
    return Status::Ok();
  }
  bool has_arrived(size_t k) const { return k < arrived_.size() && arrived_[k]; }
  size_t folded() const { return next_; }  // results 0 .. folded() - 1 are folded
  bool done() const { return next_ == arrived_.size(); }

 private:
  std::vector<bool> arrived_;
  size_t next_ = 0;
};

}  // namespace lizard
