// The worker's dialling, TLS handshake and reconnecting; the WebSocket itself
// is net/ws_channel.h's.
#include "client/worker_connection.h"

#include <spdlog/spdlog.h>
#include <boost/asio.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <atomic>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common/close_on_exec.h"
#include "net/io_runner.h"
#include "net/tls_context.h"
#include "net/ws_channel_open.h"

namespace lizard {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;

// Every member is touched on the io thread only; `channel` is also read
// under channel_mu by send().
struct WorkerConnection::Impl : std::enable_shared_from_this<WorkerConnection::Impl> {
  std::string host;
  uint16_t port;
  std::string token;
  int server_timeout_s = 10;
  TlsClientOptions tls;
  std::shared_ptr<TlsContext> tls_context;  // made at the first dial
  ConnectionCallbacks cb;
  net::io_context ioc{1};
  tcp::resolver resolver{ioc};
  net::steady_timer timer{ioc};
  std::optional<beast::tcp_stream> dialing;
  std::optional<MaybeTlsStream> securing;  // during the TLS handshake
  std::shared_ptr<WsChannel> channel;      // while connected
  bool stopping = false;
  bool warned = false;
  std::chrono::milliseconds backoff{200};
  std::thread thread;
  // The buffers of sent frames, given back once written.
  std::shared_ptr<FramePool> frames = std::make_shared<FramePool>();
  // The channel, for send() from any thread: written on the io thread under
  // the lock; WsChannel::send itself may be called from any thread.
  std::mutex channel_mu;

  // Sends a frame from any thread; dropped (its buffer given back) while
  // there is no connection.
  void queue(OutgoingFrame frame) {
    std::shared_ptr<WsChannel> ch;
    {
      std::lock_guard<std::mutex> l(channel_mu);
      ch = channel;
    }
    if (!frame.recycle) frame.recycle = frames;  // its head's buffer comes back, sent or not
    if (ch) ch->send(std::move(frame));
  }

  void connect() {
    if (stopping) return;
    resolver.async_resolve(
        host, std::to_string(port),
        [self = shared_from_this()](beast::error_code ec, tcp::resolver::results_type r) {
          if (ec) return self->retry("resolve " + self->host + ": " + ec.message());
          self->dialing.emplace(net::make_strand(self->ioc));  // the channel's strand
          self->dialing->expires_after(std::chrono::seconds(5));
          self->dialing->async_connect(
              r, [self](beast::error_code ec, const tcp::endpoint&) { self->on_tcp(ec); });
        });
  }

  std::string where() const { return host + ":" + std::to_string(port); }

  void on_tcp(beast::error_code ec) {
    if (ec) return retry("connect to " + where() + ": " + ec.message());
    tcp::socket socket = dialing->release_socket();
    dialing.reset();
    set_close_on_exec(socket.native_handle());
    socket.set_option(tcp::no_delay(true), ec);
    if (!tls.enabled) return upgrade(MaybeTlsStream(std::move(socket)));
    if (!tls_context) {
      auto made = make_client_tls_context(tls.ca_file);
      if (!made.ok()) return retry(made.status().message());
      tls_context = *made;
    }
    securing.emplace(std::move(socket), *tls_context);
    if (Status st = expect_server_name(&securing->tls(), host); !st.ok()) {
      securing.reset();
      return retry(st.message());
    }
    securing->expires_after(std::chrono::seconds(10));
    securing->tls().async_handshake(
        net::ssl::stream_base::client, [self = shared_from_this()](beast::error_code ec) {
          if (!self->securing) return;  // stopped meanwhile
          if (ec) {
            const std::string why =
                client_handshake_failure(self->securing->tls(), ec, self->where());
            self->securing.reset();
            return self->retry(why);
          }
          MaybeTlsStream stream = std::move(*self->securing);
          self->securing.reset();
          self->upgrade(std::move(stream));
        });
  }

  // The WebSocket handshake on the connected (and, with TLS, secured) stream.
  void upgrade(MaybeTlsStream stream) {
    std::map<std::string, std::string> headers;
    if (!token.empty()) headers["Authorization"] = "Bearer " + token;
    WsChannelOptions opts;
    opts.idle_timeout_s = server_timeout_s;  // notices a server that went silent
    opts.frames = frames;                    // a run's session gives the frames it handled back
    auto self = shared_from_this();
    handshake_ws_channel(
        std::move(stream), where(), "/hub", headers, opts,
        [self](const std::shared_ptr<WsChannel>& ch) { return self->on_open(ch); },
        [self](const WsOpenFailure& f) {
          constexpr const char* kRefused =
              "the server refused this worker (a wrong or missing --token?)";
          if (f.declined && self->cb.on_refused) return self->cb.on_refused(kRefused);
          self->retry(f.declined ? kRefused : "handshake: " + f.message);
        });
  }

  WsChannelCallbacks on_open(const std::shared_ptr<WsChannel>& ch) {
    auto self = shared_from_this();
    if (stopping) {
      ch->abort();
      return {};
    }
    {
      std::lock_guard<std::mutex> l(channel_mu);
      channel = ch;
    }
    warned = false;
    backoff = std::chrono::milliseconds(200);
    spdlog::info("connected to server {}{}", where(), tls.enabled ? " (TLS)" : "");
    if (cb.on_connected) cb.on_connected();
    return {[self](std::string frame) {
              if (self->cb.on_frame) self->cb.on_frame(std::move(frame));
            },
            [self, ch](const std::string& why) { self->on_lost(ch, why); }};
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

  void on_lost(const std::shared_ptr<WsChannel>& ch, const std::string& why) {
    if (channel != ch) return;
    {
      std::lock_guard<std::mutex> l(channel_mu);
      channel.reset();
    }
    if (stopping) return;
    spdlog::warn("lost the server connection: {}", why);
    if (cb.on_disconnected) cb.on_disconnected();
    retry("connection lost");
  }
};

WorkerConnection::WorkerConnection(std::string host, uint16_t port, std::string token,
                                   ConnectionCallbacks cb, int server_timeout_s,
                                   TlsClientOptions tls)
    : impl_(std::make_shared<Impl>()) {
  impl_->tls = std::move(tls);
  impl_->token = std::move(token);
  impl_->host = std::move(host);
  impl_->port = port;
  impl_->cb = std::move(cb);
  impl_->server_timeout_s = server_timeout_s;
}

WorkerConnection::~WorkerConnection() {
  stop();
}

void WorkerConnection::start() {
  net::post(impl_->ioc, [impl = impl_] { impl->connect(); });
  impl_->thread = std::thread([impl = impl_] { run_io_polling(impl->ioc); });
}

void WorkerConnection::stop() {
  if (!impl_->thread.joinable()) return;
  net::post(impl_->ioc, [impl = impl_] {
    impl->stopping = true;
    impl->timer.cancel();
    impl->resolver.cancel();
    if (impl->dialing) impl->dialing->close();
    if (impl->securing) impl->securing->next_layer().close();
    if (impl->channel) impl->channel->abort();
  });
  impl_->ioc.stop();
  impl_->thread.join();
}

void WorkerConnection::send(OutgoingFrame frame) {
  impl_->queue(std::move(frame));
}

std::shared_ptr<FramePool> WorkerConnection::frames() const {
  return impl_->frames;
}

}  // namespace lizard
