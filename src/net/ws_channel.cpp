// Boost.Beast's WebSocket stream over a plain or TLS connection
// (net/maybe_tls_stream.h), behind WsChannel; with hub_server.cpp,
// worker_connection.cpp, http_client.cpp and tls_context.cpp, one of the few
// translation units that include Beast or Asio.
#include "net/ws_channel.h"

#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include <array>
#include <mutex>
#include <vector>

#include "common/ring_queue.h"
#include "net/handler_slot.h"
#include "net/ws_channel_open.h"

namespace lizard {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

namespace {

std::string peer_of(const tcp::socket& s) {
  beast::error_code ec;
  auto ep = s.remote_endpoint(ec);
  return ec ? "?" : ep.address().to_string() + ":" + std::to_string(ep.port());
}

}  // namespace

struct WsChannel::Impl {
  explicit Impl(MaybeTlsStream s) : ws(std::move(s)) {}
  // Its executor runs one handler at a time (ws_channel_open.h): every
  // operation on the channel is posted there.
  websocket::stream<MaybeTlsStream> ws;
  beast::flat_buffer buffer;
  // Touched on the strand only.  Control frames wait apart, and go out
  // before the data frames, once the frame being written is done.
  RingQueue<OutgoingFrame> queue;     // data frames waiting to be written, in order
  RingQueue<OutgoingFrame> controls;  // control frames waiting, in order
  bool writing = false;               // a frame is being written
  bool writing_control = false;       // ... the front of `controls`
  int idle_timeout_s = 0;
  WsChannelCallbacks callbacks;
  std::shared_ptr<FramePool> frames;  // received frames' buffers; may be null
  bool ended = false;                 // the read loop has stopped
  // Frames sent from any thread wait here until the one flush posted at a
  // time moves them to `queue` on the strand.  The two vectors trade places
  // at each flush and keep their capacity, and the flush's memory is a kept
  // slot: a frame sent every iteration allocates nothing.
  std::mutex outbox_mu;
  std::vector<OutgoingFrame> outbox;  // GUARDED_BY(outbox_mu)
  bool flush_posted = false;          // GUARDED_BY(outbox_mu)
  std::vector<OutgoingFrame> draining;
  HandlerSlot flush_slot;
};

// The strand's side of send().
struct WsChannel::Flush {
  std::shared_ptr<WsChannel> channel;
  using allocator_type = SlotAllocator<void>;
  allocator_type get_allocator() const noexcept {
    return allocator_type(&channel->impl_->flush_slot);
  }
  void operator()() const { channel->flush(); }
};

// Builds channels for the two ways of opening one; a friend of WsChannel.
struct WsChannelOpener {
  static std::shared_ptr<WsChannel> make(MaybeTlsStream stream, const WsChannelOptions& o) {
    std::string peer = peer_of(stream.socket());
    stream.expires_never();  // the WebSocket's own timeouts (below) take over
    auto impl = std::make_unique<WsChannel::Impl>(std::move(stream));
    websocket::stream_base::timeout t;
    t.handshake_timeout = std::chrono::seconds(o.handshake_timeout_s);
    t.idle_timeout = std::chrono::seconds(o.idle_timeout_s);
    t.keep_alive_pings = true;
    impl->ws.set_option(t);
    impl->ws.read_message_max(o.max_message_bytes);
    impl->ws.binary(true);
    // Messages go out in frames of kFragmentBytes, between which Beast
    // sends pings and pongs: a ping never waits for a whole large message.
    impl->ws.auto_fragment(true);
    impl->ws.write_buffer_bytes(WsChannel::kFragmentBytes);
    impl->idle_timeout_s = o.idle_timeout_s;
    impl->buffer.reserve(size_t{1} << 20);
    impl->frames = o.frames;
    return std::shared_ptr<WsChannel>(new WsChannel(std::move(impl), std::move(peer)));
  }

  static void opened(const std::shared_ptr<WsChannel>& ch, beast::error_code ec,
                     const WsOnOpen& on_open, const WsOnOpenFailure& on_failure) {
    if (ec) {
      if (on_failure) on_failure({ec.message(), ec == websocket::error::upgrade_declined});
      return;
    }
    ch->start_reading(on_open ? on_open(ch) : WsChannelCallbacks{});
  }

  static websocket::stream<MaybeTlsStream>& ws(WsChannel& ch) { return ch.impl_->ws; }
};

void accept_ws_channel(MaybeTlsStream stream, http::request<http::string_body> upgrade,
                       const WsChannelOptions& opts, WsOnOpen on_open, WsOnOpenFailure on_failure) {
  auto ch = WsChannelOpener::make(std::move(stream), opts);
  auto req = std::make_shared<http::request<http::string_body>>(std::move(upgrade));
  WsChannelOpener::ws(*ch).async_accept(
      *req, [ch, req, on_open = std::move(on_open), on_failure = std::move(on_failure)](
                beast::error_code ec) { WsChannelOpener::opened(ch, ec, on_open, on_failure); });
}

void handshake_ws_channel(MaybeTlsStream stream, const std::string& host, const std::string& target,
                          const std::map<std::string, std::string>& headers,
                          const WsChannelOptions& opts, WsOnOpen on_open,
                          WsOnOpenFailure on_failure) {
  auto ch = WsChannelOpener::make(std::move(stream), opts);
  auto& ws = WsChannelOpener::ws(*ch);
  if (!headers.empty())
    ws.set_option(websocket::stream_base::decorator([headers](websocket::request_type& req) {
      for (const auto& [name, value] : headers) req.set(name, value);
    }));
  ws.async_handshake(
      host, target,
      [ch, on_open = std::move(on_open), on_failure = std::move(on_failure)](beast::error_code ec) {
        WsChannelOpener::opened(ch, ec, on_open, on_failure);
      });
}

WsChannel::WsChannel(std::unique_ptr<Impl> impl, std::string peer)
    : impl_(std::move(impl)), peer_(std::move(peer)) {}

WsChannel::~WsChannel() = default;

void WsChannel::start_reading(WsChannelCallbacks callbacks) {
  impl_->callbacks = std::move(callbacks);
  do_read();
}

void WsChannel::do_read() {
  impl_->ws.async_read(
      impl_->buffer, [self = shared_from_this()](beast::error_code ec, std::size_t) {
        if (ec) return self->closed(self->why_closed(ec.message(), ec == beast::error::timeout));
        Impl& i = *self->impl_;
        const auto bytes = i.buffer.data();  // one contiguous buffer
        std::string frame = i.frames ? i.frames->take() : std::string();
        frame.assign(static_cast<const char*>(bytes.data()), bytes.size());
        i.buffer.consume(i.buffer.size());
        if (i.callbacks.on_frame) i.callbacks.on_frame(std::move(frame));
        self->do_read();
      });
}

// The connection has ended: later sends are dropped (writes under way fail
// on their own), and the callbacks, which may hold their owner's state, are
// let go after the last call.
std::string WsChannel::why_closed(const std::string& error, bool timed_out) const {
  if (timed_out)
    return "missed heartbeat: no frame or pong within " + std::to_string(impl_->idle_timeout_s) +
           " s";
  return "its connection closed: " + error;
}

void WsChannel::closed(const std::string& why) {
  if (impl_->ended) return;
  impl_->ended = true;
  WsChannelCallbacks cb = std::move(impl_->callbacks);
  impl_->callbacks = {};
  if (cb.on_closed) cb.on_closed(why);
}

void WsChannel::send(OutgoingFrame frame) {
  queued_bytes_ += frame.size();
  Impl& i = *impl_;
  bool post = false;
  {
    std::lock_guard<std::mutex> l(i.outbox_mu);
    i.outbox.push_back(std::move(frame));
    post = !i.flush_posted;
    i.flush_posted = true;
  }
  if (post) net::post(i.ws.get_executor(), Flush{shared_from_this()});
}

void WsChannel::flush() {
  Impl& i = *impl_;
  {
    std::lock_guard<std::mutex> l(i.outbox_mu);
    std::swap(i.outbox, i.draining);
    i.flush_posted = false;
  }
  for (OutgoingFrame& f : i.draining) {
    if (i.ended)
      queued_bytes_ -= f.size();  // dropped (its buffer goes back to its pool)
    else if (f.is_control)
      i.controls.push(std::move(f));
    else
      i.queue.push(std::move(f));
  }
  i.draining.clear();
  if (!i.writing) do_write();
}

// Writes the next frame, if any: the first control frame, else the first
// data frame.
void WsChannel::do_write() {
  Impl& i = *impl_;
  i.writing_control = !i.controls.empty();
  i.writing = i.writing_control || !i.queue.empty();
  if (!i.writing) return;
  const OutgoingFrame& f = i.writing_control ? i.controls.front() : i.queue.front();
  auto written = [self = shared_from_this()](beast::error_code ec, std::size_t) {
    Impl& i = *self->impl_;
    RingQueue<OutgoingFrame>& written = i.writing_control ? i.controls : i.queue;
    self->queued_bytes_ -= written.front().size();
    written.pop();
    if (ec) {
      for (; !i.controls.empty(); i.controls.pop())
        self->queued_bytes_ -= i.controls.front().size();
      for (; !i.queue.empty(); i.queue.pop()) self->queued_bytes_ -= i.queue.front().size();
      i.writing = false;
      return;  // the read side notices the broken connection
    }
    self->do_write();
  };
  if (f.more_tails.empty()) {
    const std::array<net::const_buffer, 2> parts{net::buffer(f.head),
                                                 net::buffer(f.tail.data(), f.tail.size())};
    return i.ws.async_write(parts, std::move(written));
  }
  std::vector<net::const_buffer> parts{net::buffer(f.head),
                                       net::buffer(f.tail.data(), f.tail.size())};
  for (std::string_view t : f.more_tails) parts.push_back(net::buffer(t.data(), t.size()));
  i.ws.async_write(parts, std::move(written));
}

void WsChannel::close() {
  net::post(impl_->ws.get_executor(), [self = shared_from_this()] {
    if (!self->impl_->ws.is_open()) return;
    self->impl_->ws.async_close(websocket::close_code::normal, [self](beast::error_code) {});
  });
}

void WsChannel::set_max_message_bytes(uint64_t bytes) {
  net::post(impl_->ws.get_executor(),
            [self = shared_from_this(), bytes] { self->impl_->ws.read_message_max(bytes); });
}

void WsChannel::abort() {
  net::post(impl_->ws.get_executor(), [self = shared_from_this()] {
    beast::error_code ec;
    auto& s = beast::get_lowest_layer(self->impl_->ws).socket();
    s.shutdown(tcp::socket::shutdown_both, ec);
    s.close(ec);
  });
}

}  // namespace lizard
