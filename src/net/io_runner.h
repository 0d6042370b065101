// run_io_polling: runs an io_context on the calling thread as
// io_context::run() does, except that when no handler is ready it polls
// for the spin budget (common/spin_wait.h) before it sleeps in the
// reactor.  The per-iteration path crosses a daemon's io thread twice (a
// frame in, a frame out); an io thread asleep in epoll costs a wake-up each
// time (tens of microseconds on some machines), one that polls picks the
// frame up at once.  A daemon with nothing to do polls once after its last
// handler and then sleeps, as before.
//
//   std::thread t([&] { run_io_polling(ioc); });   // instead of ioc.run()
#pragma once

#include <boost/asio/io_context.hpp>

#include "common/spin_wait.h"

namespace lizard {

inline void run_io_polling(boost::asio::io_context& ioc) {
  while (!ioc.stopped()) {
    if (ioc.poll() > 0) continue;
    bool ready = false;  // a handler ran while polling
    spin_until([&] { return (ready = ioc.poll() > 0) || ioc.stopped(); });
    if (ready) continue;
    if (ioc.run_one() == 0) return;  // stopped, or out of work
  }
}

}  // namespace lizard
