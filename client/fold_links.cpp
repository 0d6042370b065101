#include "client/fold_links.h"

#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include <charconv>
#include <deque>
#include <future>
#include <set>
#include <thread>

#include "common/auth.h"
#include "common/close_on_exec.h"
#include "net/io_runner.h"
#include "net/listen_on.h"
#include "net/tls_context.h"
#include "net/ws_channel_open.h"
#include "protocol/iteration_messages.h"

namespace lizard {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// ---- FoldInbox ----------------------------------------------------------------

void FoldInbox::put(const std::string& child, std::string frame) {
  auto view = decode_view(frame);
  if (!view.ok() || view->type != MessageType::kIterationResult) return;
  auto r = IterationResultMsg::parse(view->packed);
  if (!r.ok()) return;
  std::lock_guard<std::mutex> l(mu_);
  if (closed_) return;
  parts_[{child, r->iteration}] = std::move(frame);
  cv_.notify_all();
}

void FoldInbox::opened(const std::string& child) {
  std::lock_guard<std::mutex> l(mu_);
  ended_.erase(child);
}

void FoldInbox::closed(const std::string& child) {
  std::lock_guard<std::mutex> l(mu_);
  ended_.emplace(child, std::chrono::steady_clock::now());
  cv_.notify_all();
}

void FoldInbox::close() {
  std::lock_guard<std::mutex> l(mu_);
  closed_ = true;
  parts_.clear();
  cv_.notify_all();
}

Status FoldInbox::take(int64_t iteration, const std::vector<std::string>& children,
                       std::chrono::milliseconds wait, const std::function<bool()>& interrupted,
                       std::vector<std::string>* frames) {
  frames->resize(children.size());
  const auto deadline = std::chrono::steady_clock::now() + wait;
  std::unique_lock<std::mutex> l(mu_);
  for (size_t k = 0; k < children.size(); ++k) {
    const auto key = std::make_pair(children[k], iteration);
    for (;;) {
      if (closed_) return Status(Code::kCancelled, "the run ended on this worker");
      if (auto it = parts_.find(key); it != parts_.end()) {
        (*frames)[k] = std::move(it->second);
        parts_.erase(it);
        break;
      }
      const auto now = std::chrono::steady_clock::now();
      auto ended = ended_.find(children[k]);
      const bool gone =
          ended != ended_.end() && now - ended->second > std::chrono::milliseconds(kLinkGraceMs);
      if (gone || now >= deadline)
        return unavailable("worker " + children[k] + " below this one in the fold tree " +
                           (gone ? "lost its link to it" : "sent nothing") + " in iteration " +
                           std::to_string(iteration));
      l.unlock();
      const bool stop = interrupted && interrupted();
      l.lock();
      if (stop) return Status(Code::kCancelled, "the run was stopped on this worker");
      cv_.wait_for(l, std::chrono::milliseconds(100));
    }
  }
  // What is left of earlier iterations will never be taken.
  for (auto it = parts_.begin(); it != parts_.end();)
    it = it->first.second < iteration ? parts_.erase(it) : std::next(it);
  return Status::Ok();
}

// ---- FoldLinks ----------------------------------------------------------------

// Its handlers hold `this`: FoldLinks stops the io thread before the Impl goes.
struct FoldLinks::Impl {
  explicit Impl(Options o) : opts(std::move(o)), acceptor(ioc) {}

  Options opts;
  std::shared_ptr<TlsContext> serving, dialling;  // with TLS: the two sides' contexts
  net::io_context ioc;
  tcp::acceptor acceptor;
  std::thread thread;
  std::mutex mu;
  std::map<std::string, std::shared_ptr<FoldInbox>> inboxes;  // GUARDED_BY(mu)
  // The links of the workers below this one, by run and child (send_down),
  // from each link's opening to its end: a session that a repeated
  // run_start replaced finds its children's links still there.
  std::map<std::string, std::map<std::string, std::weak_ptr<WsChannel>>> below;  // GUARDED_BY(mu)
  std::condition_variable link_opened;
  // Runs forgotten lately, whose late frames make no inbox again.
  static constexpr size_t kForgottenKept = 1024;
  std::set<std::string> forgotten;          // GUARDED_BY(mu)
  std::deque<std::string> forgotten_order;  // GUARDED_BY(mu), oldest first

  WsChannelOptions channel_options() const {
    WsChannelOptions c;
    c.idle_timeout_s = opts.idle_timeout_s;
    c.handshake_timeout_s = 10;
    return c;
  }

  // The run's inbox; made when it has none, unless `make` is false or the
  // run was forgotten (and the session does not ask for it anew).
  std::shared_ptr<FoldInbox> inbox(const std::string& run_id, bool make, bool for_session) {
    std::lock_guard<std::mutex> l(mu);
    if (auto it = inboxes.find(run_id); it != inboxes.end()) return it->second;
    if (!make || (!for_session && forgotten.count(run_id) > 0)) return nullptr;
    forgotten.erase(run_id);  // a session that a repeated run_start started
    auto in = std::make_shared<FoldInbox>();
    inboxes.emplace(run_id, in);
    return in;
  }

  void forget(const std::string& run_id) {
    std::shared_ptr<FoldInbox> in;
    {
      std::lock_guard<std::mutex> l(mu);
      if (auto it = inboxes.find(run_id); it != inboxes.end()) {
        in = std::move(it->second);
        inboxes.erase(it);
      }
      if (forgotten.insert(run_id).second) forgotten_order.push_back(run_id);
      if (forgotten_order.size() > kForgottenKept) {
        forgotten.erase(forgotten_order.front());
        forgotten_order.pop_front();
      }
    }
    if (in) in->close();
  }

  void do_accept() {
    acceptor.async_accept([self = this](beast::error_code ec, tcp::socket s) {
      if (ec == net::error::operation_aborted) return;
      if (!ec) self->on_accept(std::move(s));
      self->do_accept();
    });
  }

  // Reads the upgrade request, then takes the link or refuses it.
  void on_accept(tcp::socket socket) {
    set_close_on_exec(socket.native_handle());
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    struct Reading {
      Reading(tcp::socket s, TlsContext* tls)
          : stream(tls ? MaybeTlsStream(std::move(s), *tls) : MaybeTlsStream(std::move(s))) {}
      MaybeTlsStream stream;
      beast::flat_buffer buffer;
      http::request<http::string_body> request;
    };
    auto r = std::make_shared<Reading>(std::move(socket), serving.get());
    r->stream.expires_after(std::chrono::seconds(10));
    auto read_request = [self = this, r] {
      http::async_read(r->stream, r->buffer, r->request, [self, r](beast::error_code ec, size_t) {
        if (ec) return;
        r->stream.expires_never();
        self->on_request(std::move(r->stream), std::move(r->request));
      });
    };
    if (!r->stream.is_tls()) return read_request();
    r->stream.tls().async_handshake(
        net::ssl::stream_base::server, [r, read_request](beast::error_code ec) {
          if (ec) return spdlog::debug("a fold link's TLS handshake: {}", ec.message());
          read_request();
        });
  }

  void on_request(MaybeTlsStream stream, http::request<http::string_body> req) {
    // GET /fold/<attempt>/<worker id>
    const std::string target(req.target());
    const std::string prefix = "/fold/";
    const size_t slash = target.find('/', prefix.size());
    const bool named = target.rfind(prefix, 0) == 0 && slash != std::string::npos &&
                       slash > prefix.size() && slash + 1 < target.size();
    const bool allowed =
        opts.token.empty() ||
        constant_time_equals(bearer_token(std::string(req[http::field::authorization])),
                             opts.token);
    if (!named || !allowed || !beast::websocket::is_upgrade(req))
      return refuse(std::move(stream),
                    !allowed ? http::status::forbidden : http::status::not_found);
    const std::string run_id = target.substr(prefix.size(), slash - prefix.size());
    const std::string child = target.substr(slash + 1);
    accept_ws_channel(
        std::move(stream), std::move(req), channel_options(),
        [self = this, run_id, child](const std::shared_ptr<WsChannel>& ch) {
          if (auto in = self->inbox(run_id, true, false)) in->opened(child);
          {
            std::lock_guard<std::mutex> l(self->mu);
            self->below[run_id][child] = ch;
          }
          self->link_opened.notify_all();
          std::weak_ptr<WsChannel> weak = ch;
          return WsChannelCallbacks{[self, run_id, child](std::string frame) {
                                      if (auto in = self->inbox(run_id, true, false))
                                        in->put(child, std::move(frame));
                                    },
                                    [self, run_id, child, weak](const std::string&) {
                                      self->link_closed(run_id, child, weak);
                                    }};
        },
        [child](const WsOpenFailure& f) {
          spdlog::debug("fold link from {} did not open: {}", child, f.message);
        });
  }

  using Settle = std::function<void(Result<std::shared_ptr<WsChannel>>)>;
  // The WebSocket upgrade of a dialled link, connected and, with TLS, secured.
  void upgrade(MaybeTlsStream stream, const std::string& address, const std::string& target,
               const Settle& settle, const std::function<void(std::string)>& on_frame) {
    std::map<std::string, std::string> headers;
    if (!opts.token.empty()) headers["Authorization"] = "Bearer " + opts.token;
    handshake_ws_channel(
        std::move(stream), address, target, headers, channel_options(),
        [settle, on_frame](const std::shared_ptr<WsChannel>& ch) {
          settle(ch);
          return WsChannelCallbacks{[on_frame](std::string frame) {
                                      if (on_frame) on_frame(std::move(frame));
                                    },
                                    [](const std::string&) {}};
        },
        [settle, address](const WsOpenFailure& f) {
          settle(unavailable("the fold link to " + address + " did not open: " + f.message));
        });
  }

  // A child's link ended: its run's inbox hears of it, and the link goes
  // from those send_down() uses (unless the child has dialled again since).
  void link_closed(const std::string& run_id, const std::string& child,
                   const std::weak_ptr<WsChannel>& link) {
    if (auto in = inbox(run_id, false, false)) in->closed(child);
    std::lock_guard<std::mutex> l(mu);
    auto run = below.find(run_id);
    if (run == below.end()) return;
    auto c = run->second.find(child);
    if (c != run->second.end() && !c->second.owner_before(link) && !link.owner_before(c->second))
      run->second.erase(c);
    if (run->second.empty()) below.erase(run);
  }

  void refuse(MaybeTlsStream stream, http::status status) {
    auto s = std::make_shared<MaybeTlsStream>(std::move(stream));
    auto res = std::make_shared<http::response<http::string_body>>(status, 11);
    res->body() = status == http::status::forbidden ? "a wrong or missing worker token\n"
                                                    : "not a fold link\n";
    res->prepare_payload();
    http::async_write(s->next_layer(), *res, [s, res](beast::error_code, size_t) {
      beast::error_code ignored;
      s->socket().shutdown(tcp::socket::shutdown_both, ignored);
    });
  }
};

Result<std::unique_ptr<FoldLinks>> FoldLinks::start(Options opts) {
  auto impl = std::make_unique<Impl>(std::move(opts));
  if (impl->opts.tls_cert_file.empty() != impl->opts.tls_key_file.empty() ||
      impl->opts.tls_cert_file.empty() == impl->opts.tls.enabled)
    return invalid_argument(
        "fold links over TLS need a certificate, its key and TLS to the other workers; "
        "plain links need none of them");
  if (impl->opts.tls.enabled) {
    LIZARD_ASSIGN_OR_RETURN(
        impl->serving, make_server_tls_context(impl->opts.tls_cert_file, impl->opts.tls_key_file));
    LIZARD_ASSIGN_OR_RETURN(impl->dialling, make_client_tls_context(impl->opts.tls.ca_file));
  }
  if (Status st = listen_on(&impl->acceptor, impl->opts.host, impl->opts.port, "fold address");
      !st.ok())
    return st.with_context("fold links");
  impl->do_accept();
  impl->thread = std::thread([impl = impl.get()] { run_io_polling(impl->ioc); });
  return std::unique_ptr<FoldLinks>(new FoldLinks(std::move(impl)));
}

FoldLinks::FoldLinks(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

FoldLinks::~FoldLinks() {
  impl_->ioc.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

uint16_t FoldLinks::port() const {
  beast::error_code ec;
  auto ep = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

std::shared_ptr<FoldInbox> FoldLinks::inbox(const std::string& run_id) {
  return impl_->inbox(run_id, true, true);
}

void FoldLinks::forget(const std::string& run_id) {
  impl_->forget(run_id);
}

Status FoldLinks::send_down(const std::string& run_id, const std::vector<std::string>& children,
                            const std::shared_ptr<const std::string>& frame,
                            std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const std::string& child : children) {
    std::shared_ptr<WsChannel> link;
    {
      std::unique_lock<std::mutex> l(impl_->mu);
      impl_->link_opened.wait_until(l, deadline, [&] {
        auto run = impl_->below.find(run_id);
        if (run == impl_->below.end()) return false;
        auto c = run->second.find(child);
        return c != run->second.end() && (link = c->second.lock()) != nullptr;
      });
    }
    if (!link)
      return unavailable("worker " + child + " below this one in the fold tree has no link to it");
    link->send(OutgoingFrame(std::string(), *frame, frame));  // one buffer for every child
  }
  return Status::Ok();
}

Result<std::shared_ptr<WsChannel>> FoldLinks::dial(const std::string& address,
                                                   const std::string& run_id,
                                                   const std::string& worker_id,
                                                   std::chrono::milliseconds timeout,
                                                   std::function<void(std::string)> on_frame) {
  const size_t colon = address.rfind(':');
  beast::error_code ec;
  const auto ip =
      net::ip::make_address(colon == std::string::npos ? address : address.substr(0, colon), ec);
  uint16_t port = 0;
  const char* digits = address.data() + (colon == std::string::npos ? 0 : colon + 1);
  const auto [end, parsed] = std::from_chars(digits, address.data() + address.size(), port);
  if (ec || colon == std::string::npos || parsed != std::errc() ||
      end != address.data() + address.size() || port == 0)
    return invalid_argument("a fold address that is not ip:port: " + address);
  using Outcome = Result<std::shared_ptr<WsChannel>>;
  auto done = std::make_shared<std::promise<Outcome>>();
  auto once = std::make_shared<std::once_flag>();
  auto settle = [done, once](Outcome o) {
    std::call_once(*once, [&] { done->set_value(std::move(o)); });
  };
  Impl* impl = impl_.get();
  const std::string target = "/fold/" + run_id + "/" + worker_id;
  auto stream = std::make_shared<beast::tcp_stream>(net::make_strand(impl->ioc));
  stream->expires_after(timeout);
  stream->async_connect(tcp::endpoint(ip, port), [impl, stream, settle, address, target,
                                                  on_frame](beast::error_code ec) {
    if (ec) return settle(unavailable("cannot reach " + address + ": " + ec.message()));
    tcp::socket socket = stream->release_socket();
    set_close_on_exec(socket.native_handle());
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    if (!impl->dialling)
      return impl->upgrade(MaybeTlsStream(std::move(socket)), address, target, settle, on_frame);
    auto secured = std::make_shared<MaybeTlsStream>(std::move(socket), *impl->dialling);
    if (Status st = expect_server_name(&secured->tls(), address.substr(0, address.rfind(':')));
        !st.ok())
      return settle(st);
    secured->tls().async_handshake(
        net::ssl::stream_base::client,
        [impl, secured, address, target, settle, on_frame](beast::error_code ec) {
          if (ec)
            return settle(
                unavailable(client_handshake_failure(secured->tls(), ec, "fold link " + address)));
          impl->upgrade(std::move(*secured), address, target, settle, on_frame);
        });
  });
  auto future = done->get_future();
  if (future.wait_for(timeout + std::chrono::seconds(1)) != std::future_status::ready)
    return unavailable("the fold link to " + address + " did not open within " +
                       std::to_string(timeout.count()) + " ms");
  return future.get();
}

}  // namespace lizard
