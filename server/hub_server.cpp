// With http_session.cpp, the only server translation units that include
// Boost.Beast; worker WebSockets are net/ws_channel.h's, TLS streams
// net/maybe_tls_stream.h's.
#include "server/hub_server.h"

#include <spdlog/spdlog.h>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>

#include <algorithm>
#include <atomic>
#include <thread>
#include <utility>

#include "common/close_on_exec.h"
#include "net/io_runner.h"
#include "net/listen_on.h"
#include "net/maybe_tls_stream.h"
#include "net/tls_context.h"
#include "server/accept_backoff.h"
#include "server/http_session.h"
#include "server/large_body_gate.h"

namespace lizard {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;

struct HubServer::Impl {
  ServerHandler* handler;
  HubServerOptions opts;
  std::shared_ptr<TlsContext> tls;  // when serving TLS
  net::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  std::thread thread;

  net::steady_timer accept_timer{ioc};
  AcceptBackoff accept_backoff;
  std::shared_ptr<std::atomic<int>> answers = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<LargeBodyGate> large_bodies;

  void do_accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted) return;
      if (ec) return accept_failed(ec);
      if (auto note = accept_backoff.accepted(AcceptBackoff::Clock::now()); !note.empty())
        spdlog::info("{}", note);
      set_close_on_exec(socket.native_handle());
      socket.set_option(tcp::no_delay(true), ec);
      auto stream =
          tls ? MaybeTlsStream(std::move(socket), *tls) : MaybeTlsStream(std::move(socket));
      start_http_session(std::move(stream), handler, opts, answers, large_bodies);
      do_accept();
    });
  }

  // Out of descriptors, accepting again at once would fail at once, for as
  // long as the connection waits in the backlog: wait, and log once a second.
  void accept_failed(const beast::error_code& ec) {
    const int err = ec.category() == boost::system::system_category() ? ec.value() : 0;
    auto step = accept_backoff.failed(err, ec.message(), AcceptBackoff::Clock::now());
    if (!step.warning.empty()) spdlog::warn("{}", step.warning);
    if (step.delay.count() == 0) return do_accept();
    accept_timer.expires_after(step.delay);
    accept_timer.async_wait([this](beast::error_code waited) {
      if (!waited && acceptor.is_open()) do_accept();
    });
  }
};

HubServer::HubServer(ServerHandler* handler, HubServerOptions opts) : impl_(new Impl) {
  impl_->handler = handler;
  impl_->opts = std::move(opts);
  impl_->large_bodies =
      std::make_shared<LargeBodyGate>(impl_->opts.large_body_bytes, impl_->opts.large_bodies);
}

HubServer::~HubServer() {
  stop();
}

Status HubServer::start() {
  if (!impl_->opts.tls_cert_file.empty() || !impl_->opts.tls_key_file.empty()) {
    auto tls = make_server_tls_context(impl_->opts.tls_cert_file, impl_->opts.tls_key_file);
    if (!tls.ok()) return tls.status();
    impl_->tls = *tls;
  }
  LIZARD_RETURN_IF_ERROR(listen_on(&impl_->acceptor, impl_->opts.host, impl_->opts.port, "--host"));
  impl_->do_accept();
  impl_->thread = std::thread([this] { run_io_polling(impl_->ioc); });
  return Status::Ok();
}

void HubServer::stop_accepting() {
  if (!impl_->thread.joinable()) return;
  net::post(impl_->ioc, [this] {
    beast::error_code ec;
    impl_->acceptor.close(ec);
    impl_->accept_timer.cancel();
  });
}

void HubServer::stop(std::chrono::milliseconds drain) {
  if (!impl_->thread.joinable()) return;
  stop_accepting();
  const auto deadline = std::chrono::steady_clock::now() + drain;
  while (*impl_->answers > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  impl_->ioc.stop();
  impl_->thread.join();
}

uint16_t HubServer::port() const {
  beast::error_code ec;
  auto ep = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

}  // namespace lizard
