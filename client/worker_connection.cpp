// The only client translation unit that includes Boost.Beast.
#include "client/worker_connection.h"

#include <spdlog/spdlog.h>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include <deque>
#include <optional>
#include <thread>

namespace lizard {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

struct WorkerConnection::Impl : std::enable_shared_from_this<WorkerConnection::Impl> {
  std::string host;
  uint16_t port;
  std::string token;
  ConnectionCallbacks cb;
  net::io_context ioc{1};
  tcp::resolver resolver{ioc};
  net::steady_timer timer{ioc};
  std::optional<websocket::stream<beast::tcp_stream>> ws;
  beast::flat_buffer buffer;
  std::deque<std::string> queue;
  bool connected = false;
  bool stopping = false;
  bool warned = false;
  std::chrono::milliseconds backoff{200};
  std::thread thread;

  void connect() {
    if (stopping) return;
    resolver.async_resolve(
        host, std::to_string(port),
        [self = shared_from_this()](beast::error_code ec, tcp::resolver::results_type r) {
          if (ec) return self->retry("resolve " + self->host + ": " + ec.message());
          self->ws.emplace(self->ioc);
          beast::get_lowest_layer(*self->ws).expires_after(std::chrono::seconds(5));
          beast::get_lowest_layer(*self->ws).async_connect(
              r, [self](beast::error_code ec, const tcp::endpoint&) { self->on_tcp(ec); });
        });
  }

  void on_tcp(beast::error_code ec) {
    if (ec) return retry("connect to " + host + ":" + std::to_string(port) + ": " + ec.message());
    auto& s = beast::get_lowest_layer(*ws);
    s.socket().set_option(tcp::no_delay(true), ec);
    s.expires_never();
    websocket::stream_base::timeout t;  // notices a server that went silent
    t.handshake_timeout = std::chrono::seconds(30);
    t.idle_timeout = std::chrono::seconds(10);
    t.keep_alive_pings = true;
    ws->set_option(t);
    ws->read_message_max(uint64_t{16} << 30);
    ws->binary(true);
    ws->auto_fragment(false);  // a message is one frame: no per-4 KiB writes
    buffer.reserve(size_t{1} << 20);
    if (!token.empty())
      ws->set_option(websocket::stream_base::decorator([t = token](websocket::request_type& req) {
        req.set(beast::http::field::authorization, "Bearer " + t);
      }));
    ws->async_handshake(
        host + ":" + std::to_string(port), "/workers",
        [self = shared_from_this()](beast::error_code ec) {
          if (ec == websocket::error::upgrade_declined)
            return self->retry("the server refused this worker (a wrong or missing --token?)");
          if (ec) return self->retry("handshake: " + ec.message());
          self->connected = true;
          self->warned = false;
          self->backoff = std::chrono::milliseconds(200);
          spdlog::info("connected to server {}:{}", self->host, self->port);
          if (self->cb.on_connected) self->cb.on_connected();
          self->do_read();
        });
  }

  void retry(const std::string& why) {
    if (stopping) return;
    if (!warned)
      spdlog::warn("server not reachable ({}); retrying", why);
    else
      spdlog::debug("server not reachable ({}); retry in {} ms", why, backoff.count());
    warned = true;
    timer.expires_after(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
    timer.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (!ec) self->connect();
    });
  }

  void do_read() {
    ws->async_read(buffer, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->on_lost(ec);
      std::string frame = beast::buffers_to_string(self->buffer.data());
      self->buffer.consume(self->buffer.size());
      if (self->cb.on_frame) self->cb.on_frame(std::move(frame));
      self->do_read();
    });
  }

  void on_lost(beast::error_code ec) {
    if (!connected) return;
    connected = false;
    queue.clear();
    spdlog::warn("lost the server connection: {}", ec.message());
    if (cb.on_disconnected) cb.on_disconnected();
    retry("connection lost");
  }

  void do_write() {
    ws->async_write(net::buffer(queue.front()),
                    [self = shared_from_this()](beast::error_code ec, std::size_t) {
                      if (ec) {
                        self->queue.clear();
                        return;  // the read side reports the loss
                      }
                      self->queue.pop_front();
                      if (!self->queue.empty() && self->connected) self->do_write();
                    });
  }
};

WorkerConnection::WorkerConnection(std::string host, uint16_t port, std::string token,
                                   ConnectionCallbacks cb)
    : impl_(std::make_shared<Impl>()) {
  impl_->token = std::move(token);
  impl_->host = std::move(host);
  impl_->port = port;
  impl_->cb = std::move(cb);
}

WorkerConnection::~WorkerConnection() {
  stop();
}

void WorkerConnection::start() {
  net::post(impl_->ioc, [impl = impl_] { impl->connect(); });
  impl_->thread = std::thread([impl = impl_] { impl->ioc.run(); });
}

void WorkerConnection::stop() {
  if (!impl_->thread.joinable()) return;
  net::post(impl_->ioc, [impl = impl_] {
    impl->stopping = true;
    impl->timer.cancel();
    if (impl->ws && impl->ws->is_open()) {
      beast::error_code ec;
      beast::get_lowest_layer(*impl->ws).socket().shutdown(tcp::socket::shutdown_both, ec);
      beast::get_lowest_layer(*impl->ws).close();
    }
  });
  impl_->ioc.stop();
  impl_->thread.join();
}

void WorkerConnection::send(std::string frame) {
  net::post(impl_->ioc, [impl = impl_, f = std::move(frame)]() mutable {
    if (!impl->connected) return;
    impl->queue.push_back(std::move(f));
    if (impl->queue.size() == 1) impl->do_write();
  });
}

}  // namespace lizard
