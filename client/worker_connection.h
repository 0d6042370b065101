// WorkerConnection: the worker daemon's WebSocket to the server's /workers
// endpoint (a WsChannel, net/ws_channel.h), over TLS (wss://, the server's
// certificate verified) when `tls.enabled`.  Dials out, reconnects with
// exponential backoff (0.2 s up to 5 s) whenever the server is down, goes
// away or stays silent for `server_timeout_s`, and delivers frames to
// callbacks.  Runs its own io thread; send() may be called from any thread.
//
//   WorkerConnection c(host, port, token, {on_up, on_frame, on_down}, 10, {true, "ca.pem"});
//   c.start();  c.send(frame);  ...  c.stop();
//   std::string f = c.frames()->take();  ...;  c.send(std::move(f));   // buffer reused
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/frame_pool.h"
#include "net/outgoing_frame.h"
#include "net/tls_options.h"

namespace lizard {

struct ConnectionCallbacks {
  std::function<void()> on_connected;         // send the hello here
  std::function<void(std::string)> on_frame;  // one binary message
  std::function<void()> on_disconnected;
  // The server refused this worker's token: called instead of retrying
  // when set (the message says so); unset, the connection keeps retrying.
  std::function<void(std::string)> on_refused;
};

class WorkerConnection {
 public:
  // `token`, when not empty, is presented to the server as a bearer token.
  WorkerConnection(std::string host, uint16_t port, std::string token, ConnectionCallbacks cb,
                   int server_timeout_s = 10, TlsClientOptions tls = {});
  ~WorkerConnection();
  void start();
  void stop();
  // Queues a frame; dropped when not connected (the server then no longer counts on us).
  // Its buffer goes to frames() once written.
  void send(OutgoingFrame frame);  // a whole frame (std::string) converts
  // Buffers for frames to send, given back as they are written: a frame
  // taken from here and sent allocates nothing once the pool holds buffers.
  std::shared_ptr<FramePool> frames() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace lizard
