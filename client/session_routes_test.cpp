#include "client/session_routes.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lizard {
namespace {

// Frames sent along one path: the session's (by route) or the daemon's inbox.
struct Paths {
  std::vector<std::string> session, inbox;
  SessionRoutes routes;
  void arrive(const std::string& run, std::string frame) {
    if (!routes.deliver(run, frame)) inbox.push_back(frame);
  }
  // The daemon takes the oldest frame of its inbox and posts it to the session.
  void daemon_takes(const std::string& run) {
    routes.taken(run);
    session.push_back(inbox.front());
    inbox.erase(inbox.begin());
  }
  void start(const std::string& run) {
    routes.add(run, [this](std::string f) { session.push_back(std::move(f)); });
  }
};

TEST(SessionRoutes, OnlyTheRunsFramesGoStraightToItsSession) {
  EXPECT_TRUE(routed_type(MessageType::kIterate));
  EXPECT_TRUE(routed_type(MessageType::kLoop));
  EXPECT_TRUE(routed_type(MessageType::kRunEnd));
  EXPECT_FALSE(routed_type(MessageType::kRunStart));  // the daemon starts the session
  EXPECT_FALSE(routed_type(MessageType::kRunAbort));  // the daemon kills its kernels
  EXPECT_FALSE(routed_type(MessageType::kProgram));
}

TEST(SessionRoutes, FramesOfAStartedRunGoStraightToItsSession) {
  Paths p;
  p.arrive("r.0", "unknown run");
  EXPECT_EQ(p.inbox, std::vector<std::string>{"unknown run"});
  p.daemon_takes("r.0");
  p.start("r.0");
  p.arrive("r.0", "iterate 0");
  p.arrive("r.1", "another run's");
  EXPECT_EQ(p.session, (std::vector<std::string>{"unknown run", "iterate 0"}));
  EXPECT_EQ(p.inbox, std::vector<std::string>{"another run's"});
}

TEST(SessionRoutes, AFrameLeftToTheDaemonHoldsBackTheRunsLaterFrames) {
  Paths p;
  p.arrive("r.0", "run_end");  // came before the daemon started the session
  p.start("r.0");
  p.arrive("r.0", "later");  // must not overtake the run_end
  EXPECT_TRUE(p.session.empty());
  p.daemon_takes("r.0");
  p.daemon_takes("r.0");
  p.arrive("r.0", "last");  // nothing queued now: straight to the session
  EXPECT_EQ(p.session, (std::vector<std::string>{"run_end", "later", "last"}));
  EXPECT_TRUE(p.inbox.empty());
}

TEST(SessionRoutes, ARemovedRouteLeavesFramesToTheDaemon) {
  Paths p;
  p.start("r.0");
  p.routes.remove("r.0");
  p.arrive("r.0", "after the session went");
  EXPECT_TRUE(p.session.empty());
  EXPECT_EQ(p.inbox, std::vector<std::string>{"after the session went"});
}

}  // namespace
}  // namespace lizard
