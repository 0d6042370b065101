// Opening a WsChannel (net/ws_channel.h) on a connection, plain or TLS
// (net/maybe_tls_stream.h; a TLS stream's own handshake is done first): the
// server accepts a worker's upgrade request, the worker performs the
// handshake.  The stream's executor must run one handler at a time (a strand,
// or an io_context that one thread runs): the channel posts its work there.
// Only the translation units that already speak Boost.Asio/Beast include this.
//
//   accept_ws_channel(std::move(socket), std::move(upgrade_request), opts,
//                     [&](const std::shared_ptr<WsChannel>& ch) { return callbacks; },
//                     [&](const WsOpenFailure& f) { log(f.message); });
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "net/maybe_tls_stream.h"
#include "net/ws_channel.h"

namespace lizard {

struct WsOpenFailure {
  std::string message;
  bool declined = false;  // the server answered the upgrade with an HTTP error
};

// Called once the handshake is done, on the channel's strand, before any
// frame is read: returns the callbacks for the channel's frames and its end.
using WsOnOpen = std::function<WsChannelCallbacks(const std::shared_ptr<WsChannel>&)>;
using WsOnOpenFailure = std::function<void(const WsOpenFailure&)>;

// Server side: answers `upgrade`, the request read from `stream`.
void accept_ws_channel(MaybeTlsStream stream,
                       boost::beast::http::request<boost::beast::http::string_body> upgrade,
                       const WsChannelOptions& opts, WsOnOpen on_open, WsOnOpenFailure on_failure);

// Worker side: upgrades the connected `stream` to a WebSocket at
// `host`/`target`, sending `headers` (an authorization, say) with the request.
void handshake_ws_channel(MaybeTlsStream stream, const std::string& host, const std::string& target,
                          const std::map<std::string, std::string>& headers,
                          const WsChannelOptions& opts, WsOnOpen on_open,
                          WsOnOpenFailure on_failure);

}  // namespace lizard
