// start_http_session: serves one accepted connection of the hub (the REST
// API and the worker hub on one port) until it closes: over TLS the
// handshake first, then requests read one at a time (headers, then a JSON
// body within --max-body, an upload streamed to disk, or a worker's
// WebSocket upgrade handed to its channel), each answered by the
// ServerHandler in order.  Everything runs on the stream's strand; nothing
// blocks.
//
//   start_http_session(std::move(stream), handler, opts, answers, gate);
#pragma once

#include <atomic>
#include <memory>

#include "net/maybe_tls_stream.h"
#include "server/hub_server.h"
#include "server/large_body_gate.h"

namespace lizard {

// `answers` counts the answers being written (HubServer::stop drains them);
// `gate` admits the large bodies read at once.
void start_http_session(MaybeTlsStream stream, ServerHandler* handler, const HubServerOptions& opts,
                        std::shared_ptr<std::atomic<int>> answers,
                        std::shared_ptr<LargeBodyGate> gate);

}  // namespace lizard
