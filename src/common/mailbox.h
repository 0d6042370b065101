// Mailbox<T>: a closable multi-producer queue that one consumer thread waits
// on.  Network threads post into it; run drivers block on it, never the other way.
// A waiting consumer polls (common/spin_wait.h) before it sleeps, so that an
// answer that lands soon is taken without a wake-up: for the spin budget, or
// for up to twice its last wait when pushes come at a steady cadence (a run
// driver awaiting a worker's iterations).
//
//   Mailbox<Event> box;
//   box.push(e);                                   // any thread
//   std::optional<Event> e = box.pop_for(1s);      // consumer; nullopt on timeout/close
//   std::optional<Event> now = box.try_pop();      // never waits
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>

#include "common/ring_queue.h"
#include "common/spin_wait.h"

namespace lizard {

template <typename T>
class Mailbox {
 public:
  void push(T v) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (closed_) return;
      q_.push(std::move(v));
      ready_.store(true, std::memory_order_release);
    }
    cv_.notify_one();
  }

  template <typename Rep, typename Period>
  std::optional<T> pop_for(std::chrono::duration<Rep, Period> d) {
    // Polls no longer than the wait itself (compared in double: no overflow).
    const int64_t budget = spin_.budget_us();
    const std::chrono::duration<double, std::micro> wait = d;
    const auto t0 = std::chrono::steady_clock::now();
    spin_until(
        [&] { return ready_.load(std::memory_order_acquire); },
        wait.count() < static_cast<double>(budget) ? static_cast<int64_t>(wait.count()) : budget);
    std::unique_lock<std::mutex> l(mu_);
    const bool got = cv_.wait_for(l, d, [&] { return closed_ || !q_.empty(); });
    waited_since(t0, got);
    if (!got) return std::nullopt;
    return take_locked();
  }

  // Without waiting: pop_for(0) would sleep for the timer slack (~50 µs).
  std::optional<T> try_pop() {
    if (!ready_.load(std::memory_order_acquire)) return std::nullopt;
    std::lock_guard<std::mutex> l(mu_);
    return take_locked();
  }

  std::optional<T> pop() {
    const auto t0 = std::chrono::steady_clock::now();
    spin_until([&] { return ready_.load(std::memory_order_acquire); }, spin_.budget_us());
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return closed_ || !q_.empty(); });
    waited_since(t0, true);
    return take_locked();
  }

  void close() {
    {
      std::lock_guard<std::mutex> l(mu_);
      closed_ = true;
      ready_.store(true, std::memory_order_release);
    }
    cv_.notify_all();
  }

 private:
  // Sets how long the next wait polls; the consumer's thread alone touches spin_.
  void waited_since(std::chrono::steady_clock::time_point t0, bool got) {
    spin_.waited_us(got ? std::chrono::duration_cast<std::chrono::microseconds>(
                              std::chrono::steady_clock::now() - t0)
                              .count()
                        : INT64_MAX);
  }

  std::optional<T> take_locked() {
    if (q_.empty()) return std::nullopt;
    T v = q_.take();
    ready_.store(closed_ || !q_.empty(), std::memory_order_release);
    return v;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  RingQueue<T> q_;  // allocates nothing in steady use
  bool closed_ = false;
  std::atomic<bool> ready_{false};  // closed_ || !q_.empty(), readable without the lock
  AdaptiveSpin spin_;               // the consumer's
};

}  // namespace lizard
