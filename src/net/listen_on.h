// listen_on: opens, binds and listens an acceptor at host:port, close-on-exec
// (so that no helper process the daemon starts inherits it) and with
// SO_REUSEADDR (a restarted daemon binds its port again at once) — the
// server's port and a worker's fold port alike.
//
//   tcp::acceptor a(ioc);
//   LIZARD_RETURN_IF_ERROR(listen_on(&a, "0.0.0.0", 5000, "--host"));
#pragma once

#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <string>

#include "common/close_on_exec.h"
#include "common/status.h"

namespace lizard {

// `what` names the address in the error for a host that is not an address.
inline Status listen_on(boost::asio::ip::tcp::acceptor* a, const std::string& host, uint16_t port,
                        const std::string& what) {
  namespace net = boost::asio;
  boost::system::error_code ec;
  const auto addr = net::ip::make_address(host, ec);
  if (ec) return invalid_argument("bad " + what + " '" + host + "': " + ec.message());
  const net::ip::tcp::endpoint ep(addr, port);
  a->open(ep.protocol(), ec);
  if (!ec) set_close_on_exec(a->native_handle());
  if (!ec) a->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) a->bind(ep, ec);
  if (!ec) a->listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    return unavailable("cannot listen on " + host + ":" + std::to_string(port) + ": " +
                       ec.message());
  return Status::Ok();
}

}  // namespace lizard
