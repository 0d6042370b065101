// Mailbox<T>: a closable multi-producer queue that one consumer thread waits
// on.  Network threads post into it; run drivers block on it, never the other way.
//
//   Mailbox<Event> box;
//   box.push(e);                                   // any thread
//   std::optional<Event> e = box.pop_for(1s);      // consumer; nullopt on timeout/close
//   std::optional<Event> now = box.try_pop();      // never waits
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

namespace lizard {

template <typename T>
class Mailbox {
 public:
  void push(T v) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (closed_) return;
      q_.push_back(std::move(v));
    }
    cv_.notify_one();
  }

  template <typename Rep, typename Period>
  std::optional<T> pop_for(std::chrono::duration<Rep, Period> d) {
    std::unique_lock<std::mutex> l(mu_);
    if (!cv_.wait_for(l, d, [&] { return closed_ || !q_.empty(); })) return std::nullopt;
    if (q_.empty()) return std::nullopt;
    T v = std::move(q_.front());
    q_.pop_front();
    return v;
  }

  // Without waiting: pop_for(0) would sleep for the timer slack (~50 µs).
  std::optional<T> try_pop() {
    std::lock_guard<std::mutex> l(mu_);
    if (q_.empty()) return std::nullopt;
    T v = std::move(q_.front());
    q_.pop_front();
    return v;
  }

  std::optional<T> pop() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return closed_ || !q_.empty(); });
    if (q_.empty()) return std::nullopt;
    T v = std::move(q_.front());
    q_.pop_front();
    return v;
  }

  void close() {
    {
      std::lock_guard<std::mutex> l(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<T> q_;
  bool closed_ = false;
};

}  // namespace lizard
