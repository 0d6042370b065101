// OutgoingFrame: one binary WebSocket message on its way out, as a `head`
// and a `tail` written together.  `tail` may point into memory that
// `tail_owner` keeps alive until the message is written (a mapped dataset
// file), so that bulk rows go to the socket without being copied.
//
//   channel->send(encode(msg));                                  // a whole frame
//   channel->send(OutgoingFrame(encode(chunk), rows, mapping));  // header + mapped rows
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace lizard {

struct OutgoingFrame {
  OutgoingFrame(std::string frame) : head(std::move(frame)) {}  // NOLINT: a whole frame
  OutgoingFrame(std::string h, std::string_view t, std::shared_ptr<const void> owner)
      : head(std::move(h)), tail(t), tail_owner(std::move(owner)) {}
  size_t size() const { return head.size() + tail.size(); }

  std::string head;
  std::string_view tail;
  std::shared_ptr<const void> tail_owner;
};

}  // namespace lizard
