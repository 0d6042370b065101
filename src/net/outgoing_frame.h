// OutgoingFrame: one binary WebSocket message on its way out, as a `head`
// and a `tail` written together.  `tail` may point into memory that
// `tail_owner` keeps alive until the message is written (a mapped dataset
// file), so that bulk rows go to the socket without being copied.  A frame
// made with a pool gives its head's buffer back to it once written (or
// dropped), for the next frame (common/frame_pool.h).  A control frame
// (a run's abort) goes out ahead of data frames already queued.
//
//   channel->send(encode(msg));                                  // a whole frame
//   channel->send(OutgoingFrame(encode(chunk), rows, mapping));  // header + mapped rows
//   channel->send(OutgoingFrame(encode(outputs), views, owner));  // header + several tails
//   channel->send(OutgoingFrame(std::move(frame), pool));        // its buffer reused after
//   channel->send(OutgoingFrame::control(encode(abort)));        // ahead of queued rows
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/frame_pool.h"

namespace lizard {

struct OutgoingFrame {
  OutgoingFrame(std::string frame) : head(std::move(frame)) {}  // NOLINT: a whole frame
  OutgoingFrame(std::string frame, std::shared_ptr<FramePool> pool)
      : head(std::move(frame)), recycle(std::move(pool)) {}
  OutgoingFrame(std::string h, std::string_view t, std::shared_ptr<const void> owner)
      : head(std::move(h)), tail(t), tail_owner(std::move(owner)) {}
  // A head and several tails (the outputs of a worker's executors, each where
  // it came back), written in order after it.
  OutgoingFrame(std::string h, const std::vector<std::string_view>& tails,
                std::shared_ptr<const void> owner)
      : head(std::move(h)), tail_owner(std::move(owner)) {
    if (tails.empty()) return;
    tail = tails.front();
    more_tails.assign(tails.begin() + 1, tails.end());
  }
  // A frame that overtakes the data frames waiting before it.
  static OutgoingFrame control(std::string frame) {
    OutgoingFrame f(std::move(frame));
    f.is_control = true;
    return f;
  }
  OutgoingFrame(OutgoingFrame&&) noexcept = default;
  OutgoingFrame& operator=(OutgoingFrame&& o) noexcept {
    give_back();
    head = std::move(o.head);
    tail = o.tail;
    more_tails = std::move(o.more_tails);
    tail_owner = std::move(o.tail_owner);
    recycle = std::move(o.recycle);
    is_control = o.is_control;
    return *this;
  }
  OutgoingFrame(const OutgoingFrame&) = delete;
  OutgoingFrame& operator=(const OutgoingFrame&) = delete;
  ~OutgoingFrame() { give_back(); }

  size_t size() const {
    size_t n = head.size() + tail.size();
    for (std::string_view t : more_tails) n += t.size();
    return n;
  }

  std::string head;
  std::string_view tail;
  std::vector<std::string_view> more_tails;  // after `tail`, owned by tail_owner too
  std::shared_ptr<const void> tail_owner;
  std::shared_ptr<FramePool> recycle;  // where head's buffer goes once written; null: freed
  bool is_control = false;             // sent ahead of queued data frames

 private:
  void give_back() {
    if (recycle) recycle->give(std::move(head));
    recycle.reset();
  }
};

}  // namespace lizard
