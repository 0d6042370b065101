// WsChannel: one WebSocket connection carrying lizard's binary messages, the
// same on both ends — the server's hub for each worker, and the worker's
// connection to the server, over plain TCP or TLS.  It owns the stream, whose
// executor is a strand: every operation on the stream runs there, handlers
// never run at once, and send() and close() may be called from any thread.
// Outgoing messages wait in a queue and are written one at a time, in order,
// except that control frames (OutgoingFrame::control) go ahead of the data
// frames still waiting; once its buffers have grown, sending allocates
// nothing, from any thread.  Liveness comes from WebSocket pings: after half
// of `idle_timeout_s` with nothing received the channel pings, and a peer
// silent for the whole timeout counts as gone ("missed heartbeat").  A
// message goes out in WebSocket frames of at most kFragmentBytes, between
// which pings and pongs are sent, so that over a slow link a ping never
// waits for a whole large message.  Frames are handed to `on_frame` as they arrive, in
// buffers from `WsChannelOptions::frames` when set; `on_closed` runs once
// when the connection ends, for whatever reason.
//
// Channels are opened by accept_ws_channel() (server) or
// handshake_ws_channel() (worker), declared in net/ws_channel_open.h beside
// the Boost types they take; this header keeps Boost.Beast out of its users.
//
//   channel->send(encode(msg));      // any thread; dropped once the channel is closed
//   size_t waiting = channel->queued_bytes();
//   channel->close();                // a clean close; on_closed follows
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/frame_pool.h"
#include "net/outgoing_frame.h"

namespace lizard {

struct WsChannelOptions {
  int idle_timeout_s = 10;       // a peer silent this long is gone (pings at half)
  int handshake_timeout_s = 30;  // the upgrade must complete within this
  uint64_t max_message_bytes = uint64_t{16} << 30;
  // Where received frames' buffers come from (their receiver may give them
  // back once done with them); null: each is allocated.
  std::shared_ptr<FramePool> frames;
};

struct WsChannelCallbacks {
  std::function<void(std::string frame)> on_frame;        // one message, on the strand
  std::function<void(const std::string& why)> on_closed;  // once, on the strand
};

class WsChannel : public std::enable_shared_from_this<WsChannel> {
 public:
  // The largest WebSocket frame written: 0.5 s at 2 Mbit/s, so that a ping
  // or pong waits at most that long behind a message being written.
  static constexpr size_t kFragmentBytes = size_t{128} << 10;

  ~WsChannel();
  WsChannel(const WsChannel&) = delete;
  WsChannel& operator=(const WsChannel&) = delete;

  void send(OutgoingFrame frame);
  // Bytes queued and not yet written (for pacing large transfers).
  size_t queued_bytes() const { return queued_bytes_; }
  // Sends a close frame; the peer's answer (or the timeout) ends the channel.
  void close();
  // Messages received from now on may be this large; a larger one ends the
  // channel.  Any thread.
  void set_max_message_bytes(uint64_t bytes);
  // Closes the socket at once, without a close frame (the process is leaving).
  void abort();
  // The peer's address, "host:port".
  const std::string& peer() const { return peer_; }

  struct Impl;  // the Beast stream and the queue: ws_channel.cpp

 private:
  struct Flush;
  friend struct WsChannelOpener;
  explicit WsChannel(std::unique_ptr<Impl> impl, std::string peer);
  void start_reading(WsChannelCallbacks callbacks);
  void do_read();
  void do_write();
  void flush();
  void closed(const std::string& why);
  // Why the connection ended, as the peer's record says it.
  std::string why_closed(const std::string& error, bool timed_out) const;

  std::unique_ptr<Impl> impl_;
  const std::string peer_;
  std::atomic<size_t> queued_bytes_{0};
};

}  // namespace lizard
