// Opening a WsChannel (net/ws_channel.h) on a TCP connection: the server
// accepts a worker's upgrade request, the worker performs the handshake.
// Only the translation units that already speak Boost.Asio/Beast include this.
//
//   accept_ws_channel(std::move(socket), std::move(upgrade_request), opts,
//                     [&](const std::shared_ptr<WsChannel>& ch) { return callbacks; },
//                     [&](const WsOpenFailure& f) { log(f.message); });
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>

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

// Server side: answers `upgrade`, the request read from `socket`.
void accept_ws_channel(boost::asio::ip::tcp::socket socket,
                       boost::beast::http::request<boost::beast::http::string_body> upgrade,
                       const WsChannelOptions& opts, WsOnOpen on_open, WsOnOpenFailure on_failure);

// Worker side: upgrades the connected `socket` to a WebSocket at
// `host`/`target`, sending `headers` (an authorization, say) with the request.
void handshake_ws_channel(boost::asio::ip::tcp::socket socket, const std::string& host,
                          const std::string& target,
                          const std::map<std::string, std::string>& headers,
                          const WsChannelOptions& opts, WsOnOpen on_open,
                          WsOnOpenFailure on_failure);

}  // namespace lizard
