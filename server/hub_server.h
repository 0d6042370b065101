// HubServer: the server's one listening port.  Serves HTTP/1.1 (keep-alive)
// to users and upgrades GET /workers to a WebSocket for worker daemons; hands
// both to a ServerHandler.  With a certificate and key, both go over TLS
// (https://, wss://) on the same port.  Runs its io_context on its own thread, and every
// connection's state is touched there only (strands, no locks); worker
// WebSockets are WsChannels (net/ws_channel.h).
//
//   HubServer s(handler, {"0.0.0.0", 5000});
//   Status st = s.start();   // binds; fails if the port is taken or the TLS files are unusable
//   ...; s.stop_accepting();   // a shutdown: no new connection; open ones are still answered
//   ...; s.stop();             // the answers handed over by now are written first
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "server/transport.h"

namespace lizard {

struct HubServerOptions {
  std::string host = "0.0.0.0";
  uint16_t port = 5000;
  // Bytes per HTTP request body (uploads to /datasets excepted): bodies are
  // JSON, held in memory and parsed into documents many times their size.
  uint64_t max_body = uint64_t{64} << 20;
  // At most this many bodies over large_body_bytes at once (server/large_body_gate.h; 0: any).
  int large_bodies = 2;
  uint64_t large_body_bytes = uint64_t{8} << 20;
  int heartbeat_timeout_s = 10;  // a worker silent this long is dropped
  int read_timeout_s = 30;       // a request must arrive whole within this
  std::string tls_cert_file;     // PEM chain and key: serve TLS (both or neither)
  std::string tls_key_file;
};

class HubServer {
 public:
  HubServer(ServerHandler* handler, HubServerOptions opts);
  ~HubServer();
  Status start();
  // Takes no new connection; those open are still read and answered.
  void stop_accepting();
  // Ends every connection, once the answers handed over by now are written
  // (for at most `drain`): a server shutting down answers its waiting
  // requests (`?wait=1`) first.
  void stop(std::chrono::milliseconds drain = std::chrono::seconds(5));
  uint16_t port() const;  // the bound port (useful with port 0)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lizard
