// RingQueue<T>: a first-in first-out queue in one ring of slots that grows
// (doubling) when full and never shrinks, so that a queue in steady use —
// a frame in, a frame out, every iteration — allocates nothing, where
// std::deque allocates and frees a block every few elements.  Not
// thread-safe; its owner locks (Mailbox) or keeps it to one strand
// (WsChannel).
//
//   RingQueue<std::string> q;
//   q.push(std::move(frame));
//   while (!q.empty()) { use(q.front()); q.pop(); }
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

namespace lizard {

template <typename T>
class RingQueue {
 public:
  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }
  T& front() { return *slots_[first_]; }

  void push(T v) {
    if (count_ == slots_.size()) grow();
    slots_[(first_ + count_) % slots_.size()].emplace(std::move(v));
    ++count_;
  }
  void pop() {
    slots_[first_].reset();
    first_ = (first_ + 1) % slots_.size();
    --count_;
  }
  // front(), moved out, then pop().
  T take() {
    T v = std::move(front());
    pop();
    return v;
  }

 private:
  void grow() {
    std::vector<std::optional<T>> bigger(std::max<size_t>(8, 2 * slots_.size()));
    for (size_t i = 0; i < count_; ++i) bigger[i] = std::move(slots_[(first_ + i) % slots_.size()]);
    slots_ = std::move(bigger);
    first_ = 0;
  }

  std::vector<std::optional<T>> slots_;
  size_t first_ = 0, count_ = 0;
};

}  // namespace lizard
