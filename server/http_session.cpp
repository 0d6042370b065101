// One HTTP connection of the hub (HttpSession): requests read and handed to
// the ServerHandler, answers written, uploads streamed to disk, and a
// worker's upgrade handed to its WebSocket channel.  With hub_server.cpp,
// the only server translation units that include Boost.Beast.
#include "server/http_session.h"

#include <spdlog/spdlog.h>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <optional>
#include <utility>
#include <variant>

#include "net/tls_context.h"
#include "net/ws_channel_open.h"
#include "server/shared_tail_body.h"
#include "server/upload_body.h"
#include "server/upload_reader.h"

namespace lizard {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

namespace {

const char* reason_json(int status) {
  switch (status) {
    case 408:
      return R"({"error": "request timed out"})";
    case 413:
      return R"({"error": "request body too large"})";
    case 431:
      return R"({"error": "request header fields too large"})";
    case 404:
      return R"({"error": "no such endpoint"})";
    default:
      return R"({"error": "bad request"})";
  }
}

// A JSON body (every body but an upload's) is held whole in memory and
// parsed into a document several times its size, hence a limit.
std::string body_too_large(uint64_t limit) {
  return "request body too large: the limit is " + std::to_string(limit) +
         " bytes (--max-body); send large datasets as an upload (POST /datasets)";
}

// /workers admits worker daemons only: the server's --token, not its read token.
std::string worker_token_refusal(bool sent_a_token) {
  return sent_a_token ? "this token does not admit workers: the worker hub needs the server's "
                        "worker token (--token); the read token is for GET requests only"
                      : "the worker hub is for worker daemons and needs the server's worker "
                        "token (--token): send Authorization: Bearer <token>";
}

// A worker's WebSocket channel, as the coordinator sees it.
class ChannelLink : public WorkerLink {
 public:
  explicit ChannelLink(std::shared_ptr<WsChannel> channel) : channel_(std::move(channel)) {}
  void send(OutgoingFrame frame) override { channel_->send(std::move(frame)); }
  size_t queued_bytes() const override { return channel_->queued_bytes(); }
  void close() override { channel_->close(); }
  std::string peer() const override { return channel_->peer(); }
  void set_message_limit(uint64_t bytes) override { channel_->set_max_message_bytes(bytes); }

 private:
  std::shared_ptr<WsChannel> channel_;
};

// Hands a worker's upgraded connection to the handler: a link once the
// handshake is done, then its frames and its end.
void open_worker_channel(MaybeTlsStream stream, http::request<http::string_body> upgrade,
                         ServerHandler* handler, int heartbeat_s) {
  WsChannelOptions opts;
  opts.idle_timeout_s = heartbeat_s;
  opts.max_message_bytes = kHelloMessageBytes;  // until its hello is accepted
  opts.frames = handler->received_frames();
  auto on_open = [handler](const std::shared_ptr<WsChannel>& channel) {
    const std::string id = handler->on_worker_connect(std::make_shared<ChannelLink>(channel));
    return WsChannelCallbacks{
        [handler, id](std::string frame) { handler->on_worker_frame(id, std::move(frame)); },
        [handler, id](const std::string& why) { handler->on_worker_close(id, why); }};
  };
  beast::error_code ec;
  const auto ep = stream.socket().remote_endpoint(ec);
  const std::string peer = ec ? "?" : ep.address().to_string();
  accept_ws_channel(std::move(stream), std::move(upgrade), opts, on_open,
                    [peer](const WsOpenFailure& f) {
                      spdlog::warn("worker handshake from {} failed: {}", peer, f.message);
                    });
}

// One HTTP connection: read a request, hand it over, write the answer, repeat.
// Over TLS, the handshake comes first.
class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(MaybeTlsStream&& stream, ServerHandler* handler, const HubServerOptions& opts,
              std::shared_ptr<std::atomic<int>> answers, std::shared_ptr<LargeBodyGate> gate)
      : stream_(std::move(stream)),
        handler_(handler),
        answers_(std::move(answers)),
        gate_(std::move(gate)),
        max_body_(opts.max_body),
        heartbeat_s_(opts.heartbeat_timeout_s),
        read_timeout_(opts.read_timeout_s),
        read_timer_(stream_.get_executor()) {}

  void run() {
    net::dispatch(stream_.get_executor(),
                  beast::bind_front_handler(&HttpSession::do_handshake, shared_from_this()));
  }

 private:
  // TLS: the handshake must be done within the read timeout.  A plain HTTP
  // request sent to the TLS port is answered in plain HTTP, saying so.
  void do_handshake() {
    if (!stream_.is_tls()) return do_read();
    stream_.expires_after(std::chrono::seconds(read_timeout_));
    stream_.tls().async_handshake(
        net::ssl::stream_base::server, [self = shared_from_this()](beast::error_code ec) {
          if (!ec) return self->do_read();
          beast::error_code ignored;
          const auto ep = self->stream_.socket().remote_endpoint(ignored);
          spdlog::info("TLS handshake from {} failed: {}", ignored ? "?" : ep.address().to_string(),
                       ec.message());
          if (is_plain_http_on_tls_port(ec)) self->answer_plain_http_on_tls_port();
        });
  }

  void answer_plain_http_on_tls_port() {
    static const std::string body =
        R"x({"error": "this server serves TLS: use https:// (or --tls)"})x";
    auto answer = std::make_shared<std::string>(
        "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
    net::async_write(stream_.socket(), net::buffer(*answer),
                     [self = shared_from_this(), answer](beast::error_code, std::size_t) {
                       beast::error_code ec;
                       self->stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
                     });
  }

  // A request must arrive whole within the read timeout; a slow or stalled
  // one is answered 408 and closed, and never holds up other connections.
  void do_read() {
    head_ = false;
    parser_.reset();
    file_parser_.reset();
    header_parser_.emplace();
    header_parser_->body_limit(boost::none);  // set per body type in on_header
    header_parser_->header_limit(16 * 1024);
    stream_.expires_after(std::chrono::seconds(read_timeout_ + 10));  // hard stop
    timed_out_ = false;
    read_timer_.expires_after(std::chrono::seconds(read_timeout_));
    read_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec) return;  // cancelled: the request arrived
      self->timed_out_ = true;
      self->stream_.socket().cancel();
    });
    http::async_read_header(stream_, buffer_, *header_parser_,
                            beast::bind_front_handler(&HttpSession::on_header, shared_from_this()));
  }

  // Returns true when the read failed and the failure has been handled.
  // A request that is not HTTP (a garbage request line, a NUL in the target,
  // broken chunked encoding...) is answered 400 before the connection closes.
  bool read_failed(beast::error_code ec, bool got_some) {
    if (!ec && !timed_out_) return false;
    read_timer_.cancel();
    if (ec == http::error::end_of_stream || ec == net::error::eof ||
        ec == http::error::partial_message)
      do_close();
    else if (ec == http::error::body_limit)
      send_error(413, body_too_large(max_body_));
    else if (ec == http::error::header_limit)
      send_error(431);
    else if (timed_out_)
      got_some ? send_error(408) : do_close();
    else if (ec.category() == http::make_error_code(http::error::bad_method).category())
      send_error(400, "malformed HTTP request: " + ec.message());
    return true;
  }

  // The headers are in: the body goes to a file (uploads) or into memory.
  void on_header(beast::error_code ec, std::size_t) {
    if (read_failed(ec, header_parser_->got_some())) return;
    const auto& h = header_parser_->get();
    const std::string_view target(h.target().data(), h.target().size());
    if (spdlog::should_log(spdlog::level::debug)) {  // for the answer's log line
      request_line_ = std::string(h.method_string()) + " " + std::string(target);
      request_start_ = std::chrono::steady_clock::now();
    }
    const bool upload = h.method() == http::verb::post && is_upload_target(target);
    if (upload) {
      auto dest = handler_->upload_destination(to_request(h, ""));
      if (auto* refusal = std::get_if<HttpResponse>(&dest)) {
        keep_alive_ = false;
        read_timer_.cancel();
        return write(std::move(*refusal));
      }
      auto sink = std::move(std::get<std::unique_ptr<UploadSink>>(dest));
      read_timer_.cancel();  // a large upload takes as long as it takes
      stream_.expires_after(std::chrono::hours(6));
      if (!h.chunked() && header_parser_->content_length())
        return stream_upload(std::move(sink), *header_parser_->content_length());
      // A chunked body goes through Beast's parser, written as it is parsed.
      file_parser_.emplace(std::move(*header_parser_));
      file_parser_->body_limit(boost::none);  // uploads are as large as the disk allows
      file_parser_->get().body().sink = std::move(sink);
      buffer_.reserve(size_t{1} << 20);  // reads are sized by the buffer's free capacity
      return continue_then([self = shared_from_this()] {
        self->body_start_ = std::chrono::steady_clock::now();
        http::async_read(self->stream_, self->buffer_, *self->file_parser_,
                         beast::bind_front_handler(&HttpSession::on_upload, self));
      });
    }
    if (h.has_content_length() && header_parser_->content_length() &&
        *header_parser_->content_length() > max_body_) {
      read_timer_.cancel();
      return send_error(413, body_too_large(max_body_));
    }
    large_pass_ = gate_->enter(header_parser_->content_length().value_or(0), !h.chunked());
    if (!large_pass_) {
      read_timer_.cancel();
      return send_error(503, gate_->refusal());
    }
    parser_.emplace(std::move(*header_parser_));
    parser_->body_limit(max_body_);
    // Reads are sized by the buffer's free capacity, 512 bytes unless reserved.
    if (auto length = parser_->content_length())
      buffer_.reserve(std::min<size_t>(*length, size_t{256} << 10));
    continue_then([self = shared_from_this()] {
      http::async_read(self->stream_, self->buffer_, *self->parser_,
                       beast::bind_front_handler(&HttpSession::on_read, self));
    });
  }

  // Answers "Expect: 100-continue" (curl sends it before large bodies), then
  // reads the body.
  template <typename ReadBody>
  void continue_then(ReadBody read_body) {
    const auto& h = file_parser_ ? file_parser_->get().base()
                    : parser_    ? parser_->get().base()
                                 : header_parser_->get().base();
    auto expect = h.find(http::field::expect);
    if (expect == h.end() || !beast::iequals(expect->value(), "100-continue")) return read_body();
    auto res = std::make_shared<http::response<http::empty_body>>(http::status::continue_, 11);
    http::async_write(stream_, *res, [res, read_body](beast::error_code ec, std::size_t) {
      if (!ec) read_body();
    });
  }

  // The body is in, or the sink refused it (a full disk): either way the
  // request goes to the handler, which answers the refusal.  A connection
  // that failed takes the partial file with it.
  void on_upload(beast::error_code ec, std::size_t) {
    UploadBody::value_type& body = file_parser_->get().body();
    if (ec && body.failure.ok()) {
      body.sink.reset();
      if (read_failed(ec, true)) return;
    }
    if (!ec && !body.finished) {  // an empty body: nothing was read
      body.finished = true;
      body.failure = body.sink->finish();
    }
    HttpRequest r = to_request(file_parser_->get(), "");
    r.body_file = body.sink->path();
    if (body.failure.ok()) r.body_digest = body.digest.hex_digest();
    r.body_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - body_start_).count();
    if (!body.failure.ok()) {
      keep_alive_ = false;  // the rest of the body is still on its way
      r.body_status = std::move(body.failure);
    } else {
      keep_alive_ = file_parser_->get().keep_alive();
    }
    body.sink.reset();
    head_ = false;
    dispatch(std::move(r));
  }

  // An upload of known length goes to an UploadReader: the io thread only
  // reads, the pipeline's threads digest and write.
  void stream_upload(std::unique_ptr<UploadSink> sink, uint64_t length) {
    auto reader = std::make_shared<UploadReader<MaybeTlsStream>>(
        stream_, buffer_, std::move(sink), length,
        [self = shared_from_this()](UploadReader<MaybeTlsStream>::Outcome o) {
          self->on_streamed_upload(std::move(o));
        });
    continue_then([reader] { reader->start(); });
  }

  // The body is on disk, or the sink refused it: the request goes to the
  // handler either way, which answers the refusal.  A connection that failed
  // took the partial file with it.
  void on_streamed_upload(UploadReader<MaybeTlsStream>::Outcome o) {
    if (o.ec) {
      read_failed(o.ec, true);
      return;
    }
    HttpRequest r = to_request(header_parser_->get(), "");
    r.body_file = std::move(o.path);
    r.body_digest = std::move(o.digest);
    r.body_seconds = o.seconds;
    if (!o.status.ok()) {
      keep_alive_ = false;  // the rest of the body may still be on its way
      r.body_status = std::move(o.status);
    } else {
      keep_alive_ = header_parser_->get().keep_alive();
    }
    head_ = false;
    dispatch(std::move(r));
  }

  template <typename Fields>
  static HttpRequest to_request(const http::request_header<Fields>& h, std::string body) {
    HttpRequest r;
    r.method = std::string(h.method_string());
    r.target = std::string(h.target());
    r.body = std::move(body);
    for (const auto& f : h) {
      std::string name(f.name_string());
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      r.headers[name] = std::string(f.value());
    }
    return r;
  }

  void dispatch(HttpRequest r) {
    stream_.expires_never();  // the answer may take as long as a run (?wait=1)
    auto self = shared_from_this();
    handler_->on_http(std::move(r), [self](HttpResponse resp) {
      ++*self->answers_;  // until written: a stopping server lets it go out
      net::post(self->stream_.get_executor(), [self, resp = std::move(resp)]() mutable {
        self->counted_answer_ = true;
        self->write(std::move(resp));
      });
    });
  }

  void on_read(beast::error_code ec, std::size_t) {
    if (read_failed(ec, true)) return;
    read_timer_.cancel();
    http::request<http::string_body> req = parser_->release();
    const std::string_view target(req.target().data(), req.target().size());
    if (is_worker_hub_target(target)) {
      const HttpRequest r = to_request(req, "");
      if (!handler_->authorize_worker(r.headers))
        return send_error(r.headers.count("authorization") ? 403 : 401,
                          worker_token_refusal(r.headers.count("authorization") > 0));
      if (!websocket::is_upgrade(req))
        return send_error(426,
                          "the worker hub is the worker daemons' WebSocket: send GET with "
                          "Upgrade: websocket (lizard client does)");
      stream_.expires_never();
      return open_worker_channel(std::move(stream_), std::move(req), handler_, heartbeat_s_);
    }
    if (websocket::is_upgrade(req)) return send_error(404);
    keep_alive_ = req.keep_alive();
    head_ = req.method() == http::verb::head;
    std::string body = std::move(req.body());
    dispatch(to_request(req, std::move(body)));
  }

  void send_error(int status, const std::string& message = "") {
    keep_alive_ = false;
    head_ = false;
    write(HttpResponse{status, "application/json",
                       message.empty() ? std::string(reason_json(status))
                                       : nlohmann::json{{"error", message}}.dump()});
  }

  // HEAD gets the headers GET would (Content-Length included), no body.
  void write(HttpResponse r) {
    if (!request_line_.empty()) {
      spdlog::debug("{} answered {} after {:.3f} ms", request_line_, r.status,
                    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                              request_start_)
                        .count());
      request_line_.clear();
    }
    if (head_) {
      auto res = std::make_shared<http::response<http::empty_body>>(
          static_cast<http::status>(r.status), 11);
      start_response(*res, r);
      res->content_length(r.body.size() + r.body_tail.size());
      return send(res);
    }
    if (!r.body_tail.empty()) {  // written from where the tail lies
      auto res =
          std::make_shared<http::response<SharedTailBody>>(static_cast<http::status>(r.status), 11);
      start_response(*res, r);
      res->body() = {std::move(r.body), r.body_tail, std::move(r.body_tail_owner)};
      res->prepare_payload();
      return send(res);
    }
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(r.status), 11);
    start_response(*res, r);
    res->body() = std::move(r.body);
    res->prepare_payload();
    send(res);
  }

  template <typename Response>
  void start_response(Response& res, const HttpResponse& r) {
    res.set(http::field::server, "lizard/" LIZARD_VERSION);
    res.set(http::field::content_type, r.content_type);
    res.keep_alive(keep_alive_);
  }

  template <typename Response>
  void send(const std::shared_ptr<Response>& res) {
    stream_.expires_after(std::chrono::seconds(60));
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res](beast::error_code ec, std::size_t) {
                        if (std::exchange(self->counted_answer_, false)) --*self->answers_;
                        self->large_pass_.release();  // the request's memory is gone
                        self->on_write(ec, res->need_eof());
                      });
  }

  void on_write(beast::error_code ec, bool close) {
    if (ec) return;
    if (close) return do_close();
    do_read();
  }

  // Closes our side, then reads what the client still sends for a moment:
  // closing with unread bytes would reset the connection and could lose the
  // answer just written.
  void do_close() {
    if (stream_.is_tls()) {  // close_notify, then the TCP shutdown
      stream_.expires_after(std::chrono::seconds(5));
      return stream_.tls().async_shutdown([self = shared_from_this()](beast::error_code) {
        beast::error_code ec;
        self->stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
      });
    }
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.expires_after(std::chrono::seconds(2));
    drain();
  }

  void drain() {
    stream_.async_read_some(net::buffer(drain_buf_),
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (!ec) self->drain();
                            });
  }

  MaybeTlsStream stream_;
  ServerHandler* handler_;
  // The server's count of answers handed over and not yet written; whether
  // the answer being written is one of them.
  std::shared_ptr<std::atomic<int>> answers_;
  bool counted_answer_ = false;
  std::shared_ptr<LargeBodyGate> gate_;
  LargeBodyGate::Pass large_pass_;  // the request being read or answered, if its body is large
  uint64_t max_body_;
  int heartbeat_s_;
  int read_timeout_;
  net::steady_timer read_timer_;
  bool timed_out_ = false;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> header_parser_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::request_parser<UploadBody>> file_parser_;
  bool keep_alive_ = true;
  bool head_ = false;  // the request being answered is a HEAD
  // With debug logging: the request being answered, and since when.
  std::string request_line_;
  std::chrono::steady_clock::time_point request_start_;
  std::chrono::steady_clock::time_point body_start_;  // an upload's body began to be read
  std::array<char, 4096> drain_buf_{};
};

}  // namespace

void start_http_session(MaybeTlsStream stream, ServerHandler* handler, const HubServerOptions& opts,
                        std::shared_ptr<std::atomic<int>> answers,
                        std::shared_ptr<LargeBodyGate> gate) {
  std::make_shared<HttpSession>(std::move(stream), handler, opts, std::move(answers),
                                std::move(gate))
      ->run();
}

}  // namespace lizard
