// MaybeTlsStream: one TCP connection, with or without TLS over it, as a
// single stream type for Beast's HTTP and WebSocket code, so that the server's
// sessions, the worker's channel and the HTTP client are written once for
// both.  It reads and writes through the TLS layer when there is one and
// straight through the socket otherwise; next_layer() is the TCP stream
// underneath either way (timeouts, the socket, Beast's get_lowest_layer).
// Only translation units that already include Boost.Beast include this.
//
//   MaybeTlsStream plain(std::move(socket));
//   MaybeTlsStream secure(std::move(socket), tls_context);   // handshake next:
//   secure.tls().async_handshake(net::ssl::stream_base::server, handler);
//   http::async_read(secure, buffer, parser, handler);        // as with a tcp_stream
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <boost/beast/websocket/teardown.hpp>

#include <memory>
#include <utility>

namespace lizard {

class MaybeTlsStream {
 public:
  using TcpStream = boost::beast::tcp_stream;
  using TlsLayer = boost::asio::ssl::stream<TcpStream>;
  using executor_type = TcpStream::executor_type;

  // Plain TCP.
  MaybeTlsStream(boost::asio::ip::tcp::socket&& socket)  // NOLINT: a socket is a plain stream
      : plain_(std::make_unique<TcpStream>(std::move(socket))) {}
  // TLS over `socket`, set up by `context`; the handshake is the caller's.
  MaybeTlsStream(boost::asio::ip::tcp::socket&& socket, boost::asio::ssl::context& context)
      : tls_(std::make_unique<TlsLayer>(TcpStream(std::move(socket)), context)) {}

  bool is_tls() const { return tls_ != nullptr; }
  TlsLayer& tls() { return *tls_; }
  TcpStream& next_layer() { return tls_ ? tls_->next_layer() : *plain_; }
  const TcpStream& next_layer() const { return tls_ ? tls_->next_layer() : *plain_; }
  executor_type get_executor() { return next_layer().get_executor(); }

  // As on a beast::tcp_stream.
  boost::asio::ip::tcp::socket& socket() { return next_layer().socket(); }
  template <class Duration>
  void expires_after(Duration d) {
    next_layer().expires_after(d);
  }
  void expires_never() { next_layer().expires_never(); }

  template <class MutableBuffers, class Handler>
  void async_read_some(const MutableBuffers& buffers, Handler&& handler) {
    if (tls_)
      tls_->async_read_some(buffers, std::forward<Handler>(handler));
    else
      plain_->async_read_some(buffers, std::forward<Handler>(handler));
  }
  template <class ConstBuffers, class Handler>
  void async_write_some(const ConstBuffers& buffers, Handler&& handler) {
    if (tls_)
      tls_->async_write_some(buffers, std::forward<Handler>(handler));
    else
      plain_->async_write_some(buffers, std::forward<Handler>(handler));
  }
  template <class MutableBuffers>
  size_t read_some(const MutableBuffers& buffers) {
    return tls_ ? tls_->read_some(buffers) : plain_->read_some(buffers);
  }
  template <class MutableBuffers>
  size_t read_some(const MutableBuffers& buffers, boost::system::error_code& ec) {
    return tls_ ? tls_->read_some(buffers, ec) : plain_->read_some(buffers, ec);
  }
  template <class ConstBuffers>
  size_t write_some(const ConstBuffers& buffers) {
    return tls_ ? tls_->write_some(buffers) : plain_->write_some(buffers);
  }
  template <class ConstBuffers>
  size_t write_some(const ConstBuffers& buffers, boost::system::error_code& ec) {
    return tls_ ? tls_->write_some(buffers, ec) : plain_->write_some(buffers, ec);
  }

 private:
  std::unique_ptr<TcpStream> plain_;  // exactly one of the two is set
  std::unique_ptr<TlsLayer> tls_;
};

// The end of a WebSocket over either kind of stream (found by Beast's
// websocket::stream through argument-dependent lookup): a TLS close_notify
// first where there is TLS, then the TCP shutdown.
inline void teardown(boost::beast::role_type role, MaybeTlsStream& stream,
                     boost::system::error_code& ec) {
  using boost::beast::websocket::teardown;
  if (stream.is_tls())
    teardown(role, stream.tls(), ec);
  else
    teardown(role, stream.socket(), ec);
}

template <class TeardownHandler>
void async_teardown(boost::beast::role_type role, MaybeTlsStream& stream,
                    TeardownHandler&& handler) {
  using boost::beast::websocket::async_teardown;
  if (stream.is_tls())
    async_teardown(role, stream.tls(), std::forward<TeardownHandler>(handler));
  else
    async_teardown(role, stream.socket(), std::forward<TeardownHandler>(handler));
}

}  // namespace lizard
