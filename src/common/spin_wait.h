// Spin waits: a short busy wait before a blocking one, for the waits on the
// per-iteration path (a worker waiting for its executor and hook processes,
// those processes waiting for the next call, a run driver waiting for its
// workers' replies).  Waking a thread that sleeps in the kernel costs from a
// few to tens of microseconds, and an iteration crosses several such waits;
// a thread that polls for a while sees the answer the moment it lands.  The
// budget bounds each wait's polling: a wait that outlasts it blocks as
// before, so an idle daemon polls once and then sleeps.
//
// The budget is LIZARD_SPIN_US microseconds when that is set (0 turns
// polling off), else 1000.  A polling thread yields its core between polls,
// so that on a busy machine it never delays the thread it waits for; on a
// machine of 8 hardware threads or more it first polls without yielding for
// the pause (50 us, or LIZARD_SPIN_PAUSE_US), since a yield is a system call
// that an answer landing meanwhile waits for.
//
// A wait site that waits again and again for about as long (a worker
// waiting for its executor process through kernels of a steady 1.3 ms, a
// hook process waiting for the next iteration's call) keeps an AdaptiveSpin:
// it polls for up to twice its last wait, up to ten times the budget, so that
// a steady cadence longer than the budget is still met polling.  A wait that
// outlasted that (an idle peer) brings it back to the budget.  A site that
// knows its next wait ends within an iteration (a loop's first reply, a hook
// process set up for a loop) calls expect_soon(): that wait polls for the
// longest, since no earlier wait of the cadence has set its budget yet.
//
//   if (!spin_until([&] { return flag.load(std::memory_order_acquire); })) block_on(flag);
//
//   AdaptiveSpin spin;                                   // one per wait site
//   spin_until(ready, spin.budget_us());  ...;  spin.waited_us(elapsed);
#pragma once

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace lizard {

// This process's polling budget per wait, in microseconds (read once).
int64_t spin_budget_us();
// How long a wait polls without yielding first, in microseconds (read once).
int64_t spin_pause_us();

// A wait site's polling budget, from how long its last wait took.
class AdaptiveSpin {
 public:
  static constexpr int64_t kMaxFactor = 10;  // at most this many times the budget

  int64_t budget_us() const { return budget_us_; }
  // Records how long the wait that just ended took, in microseconds.
  void waited_us(int64_t us) {
    const int64_t base = spin_budget_us();
    const int64_t most = base * kMaxFactor;
    if (base <= 0 || us > most) {
      budget_us_ = base;
      return;
    }
    budget_us_ = std::clamp(us * 2, base, most);
  }
  // The next wait polls for the longest budget.
  void expect_soon() { budget_us_ = spin_budget_us() * kMaxFactor; }

 private:
  int64_t budget_us_ = spin_budget_us();
};

// Lets a sibling hardware thread run while this one polls.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Calls `ready` until it returns true or `budget_us` (by default the
// process's budget) has passed; returns its last answer.  With a budget of
// 0, calls it once.
template <typename Ready>
bool spin_until(Ready&& ready, int64_t budget_us = spin_budget_us()) {
  if (ready()) return true;
  if (budget_us <= 0) return false;
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + std::chrono::microseconds(budget_us);
  if (const int64_t pause = std::min(spin_pause_us(), budget_us); pause > 0) {
    const auto paused_until = start + std::chrono::microseconds(pause);
    do {
      for (int i = 0; i < 32; ++i) cpu_relax();
      if (ready()) return true;
    } while (std::chrono::steady_clock::now() < paused_until);
  }
  do {
    // Yields the core to any thread that is ready to run (perhaps the one
    // this wait is for), so that polling never delays the answer it awaits.
    sched_yield();
    if (ready()) return true;
  } while (std::chrono::steady_clock::now() < end);
  return false;
}

}  // namespace lizard
