// SessionRoutes: the runs whose frames the worker's io thread hands straight
// to their sessions instead of through the daemon's thread, one wake-up less
// on the way of every iterate and loop.  The daemon adds a session's route
// when it starts the session and removes it before the session goes.  A
// run's frame goes straight only while none of the run's frames waits in the
// daemon's inbox (one that came before the route did), so that a session
// gets its run's frames in the order they came.
//
//   SessionRoutes routes;
//   // io thread, for a frame of a routed type (routed_type):
//   if (!routes.deliver(run_id, frame)) inbox.push(frame);   // counted as queued
//   // daemon thread, for each such frame it takes from the inbox:
//   routes.taken(run_id);   ...   routes.add(run_id, [s](std::string f) { s->post(f); });
//   routes.remove(run_id);  // before the session goes
//
// Thread-safe.  A route's callback runs under the routes' lock: it must only
// hand the frame on (a mailbox push), never wait.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "protocol/wire.h"

namespace lizard {

// The frames of a run that the io thread may hand straight to its session.
bool routed_type(MessageType type);

class SessionRoutes {
 public:
  using Deliver = std::function<void(std::string frame)>;

  // Hands `frame` to the run's session and returns true; otherwise leaves
  // it, counts it as queued for the daemon, and returns false.
  bool deliver(std::string_view run_id, std::string& frame);
  // The daemon took a frame of the run that deliver() left.
  void taken(std::string_view run_id);
  void add(const std::string& run_id, Deliver deliver);
  void remove(std::string_view run_id);

 private:
  struct Route {
    Deliver deliver;  // empty: the run has no session yet
    int queued = 0;   // frames left to the daemon and not yet taken
  };
  std::mutex mu_;
  std::map<std::string, Route, std::less<>> routes_;  // GUARDED_BY(mu_)
};

}  // namespace lizard
