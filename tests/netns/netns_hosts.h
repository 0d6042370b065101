// NetnsHosts: N hosts made of Linux network namespaces, for tests of a
// cluster across machines on one machine.  Each host has its own loopback
// and one link, eth0 with address 10.213.0.<i+1>/24, to a bridge that lives
// in a namespace of its own (the "switch"), so nothing touches the machine's
// own interfaces or routes.  A link can be cut (its switch port set down: the
// peer goes silent, no FIN, no RST) and shaped with a token bucket (tc tbf).
// Every namespace is removed, and every process started in one is killed,
// when the object is destroyed; namespaces left by a test process that died
// are removed by the next one (they carry its pid in their name).
//
//   NetnsHosts hosts(3);                     // needs root and `ip`
//   if (!hosts.status().ok()) GTEST_SKIP() << hosts.status().message();
//   pid_t p = hosts.spawn(0, {LIZARD_BIN, "server", "--host", "0.0.0.0"}, "server.log");
//   auto reply = hosts.in_host(2, [&] { return http_request("GET", "http://10.213.0.1:5000/ruok");
//   }); hosts.cut(1); ...; hosts.restore(1); hosts.shape(2, "1gbit");
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/status.h"

namespace lizard {

// Why namespaces cannot be made here ("" when they can): not root, no `ip`.
std::string netns_unavailable_reason();

struct SpawnOptions {
  // A directory the process sees empty: it gets a mount namespace of its own
  // with a tmpfs over the directory (a host that lacks a shared file system).
  std::string hide_dir;
};

class NetnsHosts {
 public:
  explicit NetnsHosts(int n);
  ~NetnsHosts();
  NetnsHosts(const NetnsHosts&) = delete;
  NetnsHosts& operator=(const NetnsHosts&) = delete;

  // Not ok when the hosts could not be made (the reason).
  const Status& status() const { return status_; }
  int size() const { return static_cast<int>(hosts_.size()); }
  const std::string& name(int i) const { return hosts_[static_cast<size_t>(i)]; }
  // Host i's address on the bridge.
  static std::string address(int i) { return "10.213.0." + std::to_string(i + 1); }

  // Host i's link goes down (cut) or up again (restore) at the switch.
  Status cut(int i);
  Status restore(int i);
  // Both directions of host i's link limited to `rate` (tc syntax: "1gbit").
  Status shape(int i, const std::string& rate);

  // Starts argv[0] (a path) inside host i with stdout and stderr appended to
  // `log`; -1 when it could not be started.  Killed at destruction.
  pid_t spawn(int i, const std::vector<std::string>& argv, const std::string& log,
              const SpawnOptions& options = {});
  // Sends SIGKILL and reaps (a no-op for pids not started here).
  void kill_now(pid_t pid);
  // SIGTERM, then SIGKILL after 1 s.
  void stop(pid_t pid);
  // Waits up to `timeout_s` for the process to exit: its exit status, or -1
  // (then it is killed).
  int wait(pid_t pid, int timeout_s);

  // Runs `f` on a thread whose network namespace is host i's: sockets it
  // opens are that host's.
  template <typename F>
  auto in_host(int i, F f) -> decltype(f()) {
    std::optional<decltype(f())> out;
    std::thread t([&] {
      if (enter(i)) out.emplace(f());
    });
    t.join();
    if (!out) return internal_error("cannot enter the namespace of host " + name(i));
    return std::move(*out);
  }

 private:
  bool enter(int i) const;  // the calling thread joins host i's network namespace
  Status ip(const std::vector<std::string>& args) const;
  Status make(int n);
  void remove_all();

  Status status_;
  std::string prefix_, switch_;
  std::vector<std::string> hosts_;
  std::vector<pid_t> pids_;
};

// Removes the namespaces of test processes that are no longer running.
void remove_stale_netns();

}  // namespace lizard
