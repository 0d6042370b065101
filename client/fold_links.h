// FoldLinks: the worker's side of a run's fold tree (plan/fold_tree.h).  It
// listens on the worker's fold port for the WebSockets of the workers below
// it in a run's tree — each dials GET /fold/<attempt>/<its worker id> with
// the worker token — and files the iteration_result frames they send by run
// in a FoldInbox, from which the run's session takes them to fold into its
// own result.  It also dials the worker above this one for a run, whose
// channel the session then sends its folded results on.  The state goes the
// other way: each worker that the server (or the worker above it) sends an
// iterate passes the same frame down to the workers below it (send_down).
// One io thread serves every link.
//
//   auto links = FoldLinks::start({"0.0.0.0", 0, token});   // (*links)->port(): say it in hello
//   std::shared_ptr<FoldInbox> in = (*links)->inbox("r3.0");
//   Status st = in->take(it, {"w5", "w6"}, std::chrono::seconds(150), interrupted, &frames);
//   auto up = (*links)->dial("10.0.0.2:5001", "r3.0", "w7", std::chrono::seconds(5));
//   (*links)->forget("r3.0");                                // the run is over here
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "net/outgoing_frame.h"
#include "net/tls_options.h"
#include "net/ws_channel.h"

namespace lizard {

// The iteration results that the workers below this one in a run's tree
// sent it, by child and iteration, until a session takes them.
class FoldInbox {
 public:
  // A frame from `child` (an iteration_result; others are dropped).
  void put(const std::string& child, std::string frame);
  // `child`'s link opened (again, after a repeated run_start), or ended.
  void opened(const std::string& child);
  void closed(const std::string& child);
  // The run is over here: a take() under way returns at once.
  void close();
  // The iteration_result frames of `children` for `iteration`, in their
  // order, into *frames.  Fails, saying which child it waited for, when one
  // has sent nothing after `wait`, or kLinkGraceMs after its link ended; or
  // at once when `interrupted()` (polled) or the inbox is closed.
  Status take(int64_t iteration, const std::vector<std::string>& children,
              std::chrono::milliseconds wait, const std::function<bool()>& interrupted,
              std::vector<std::string>* frames);

  // How long a child whose link ended may still be found lost by the server
  // (which then re-plans the run) before the tree is given up on.
  static constexpr int kLinkGraceMs = 3000;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<std::string, int64_t>, std::string> parts_;        // GUARDED_BY(mu_)
  std::map<std::string, std::chrono::steady_clock::time_point> ended_;  // GUARDED_BY(mu_)
  bool closed_ = false;                                                 // GUARDED_BY(mu_)
};

class FoldLinks {
 public:
  struct Options {
    std::string host = "0.0.0.0";  // where to listen
    uint16_t port = 0;             // 0: a free port
    std::string token;             // the worker token, asked of and shown to other workers
    int idle_timeout_s = 10;       // a link silent this long is gone (pings at half)
    // TLS, as between a worker and the server: links it takes are served
    // with this certificate and key (PEM files), and links it dials verify
    // the other worker's certificate, for its address, against `tls.ca_file`.
    // Both or neither: a worker that reaches its server over TLS folds over
    // TLS, or not at all.
    std::string tls_cert_file, tls_key_file;
    TlsClientOptions tls;
  };
  static Result<std::unique_ptr<FoldLinks>> start(Options opts);
  ~FoldLinks();
  FoldLinks(const FoldLinks&) = delete;
  FoldLinks& operator=(const FoldLinks&) = delete;

  uint16_t port() const;
  // The inbox of attempt `run_id`, made at its first mention (its children
  // may dial before its run_start reaches this worker).  A link's frames go
  // to the inbox the run has when each arrives: a session that a repeated
  // run_start replaced hands its children's links on to the next.
  std::shared_ptr<FoldInbox> inbox(const std::string& run_id);
  // Attempt `run_id` is over here: its inbox closes and goes; frames that
  // come for it later are dropped rather than kept for no one.
  void forget(const std::string& run_id);
  // A link to the worker at `address` (host:port) above this one, `worker_id`,
  // in attempt `run_id`'s tree; fails when it is not up within `timeout`.
  // What that worker sends down it (each iteration's iterate frame) goes
  // to `on_frame`, on the links' io thread.
  Result<std::shared_ptr<WsChannel>> dial(const std::string& address, const std::string& run_id,
                                          const std::string& worker_id,
                                          std::chrono::milliseconds timeout,
                                          std::function<void(std::string)> on_frame = {});
  // Sends `frame` down the links of `children` in attempt `run_id` (waiting
  // up to `timeout` for one whose link is still opening); fails naming a
  // child that has none.
  Status send_down(const std::string& run_id, const std::vector<std::string>& children,
                   const std::shared_ptr<const std::string>& frame,
                   std::chrono::milliseconds timeout);

  struct Impl;

 private:
  explicit FoldLinks(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace lizard
