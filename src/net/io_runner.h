// run_io_polling: runs an io_context on the calling thread as
// io_context::run() does, except that when no handler is ready it polls
// before it sleeps in the reactor: for the spin budget (common/spin_wait.h),
// or for up to twice the last gap between handlers when they come at a
// steady cadence (the frames of a run's iterations).  The per-iteration path crosses a daemon's io
// thread twice (a frame in, a frame out); an io thread asleep in epoll costs a wake-up each time
// (tens of microseconds on some machines), one that polls picks the frame up at once.  A daemon
// with nothing to do polls once after its last handler and then sleeps, as before.
//
//   std::thread t([&] { run_io_polling(ioc); });   // instead of ioc.run()
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>

#include "common/spin_wait.h"

namespace lizard {

inline void run_io_polling(boost::asio::io_context& ioc) {
  AdaptiveSpin spin;
  while (!ioc.stopped()) {
    if (ioc.poll() > 0) continue;
    const auto idle_since = std::chrono::steady_clock::now();
    bool ready = false;  // a handler ran while polling
    spin_until([&] { return (ready = ioc.poll() > 0) || ioc.stopped(); }, spin.budget_us());
    if (!ready && ioc.run_one() == 0) return;  // stopped, or out of work
    spin.waited_us(std::chrono::duration_cast<std::chrono::microseconds>(
                       std::chrono::steady_clock::now() - idle_since)
                       .count());
  }
}

}  // namespace lizard
