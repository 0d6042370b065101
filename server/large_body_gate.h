// LargeBodyGate: how many large JSON request bodies the server holds at
// once.  A body and the document parsed from it take many times its size in
// memory until the request is answered, so a few large requests at the same
// time could take the server's memory; past `slots` of them, a request with
// a large body is refused at its headers (503, before its body is read) and
// its client tries again.  Uploads (POST /datasets) stream to disk and do
// not pass through the gate.  Shared by the server's connections; thread-safe.
//
//   auto gate = std::make_shared<LargeBodyGate>(8 << 20, 2);
//   LargeBodyGate::Pass pass = gate->enter(content_length);
//   if (!pass) return refuse(503, gate->refusal());   // held until the answer is written
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace lizard {

class LargeBodyGate : public std::enable_shared_from_this<LargeBodyGate> {
 public:
  // Bodies over `large_bytes`, at most `slots` at once (0: no bound).
  LargeBodyGate(uint64_t large_bytes, int slots) : large_(large_bytes), slots_(slots) {}

  // Held while a request's body is read, parsed and answered; empty
  // (refused) when the body is large and every slot is taken.  A small
  // body's pass takes no slot.
  class Pass {
   public:
    Pass() = default;
    Pass(Pass&& o) noexcept : gate_(std::move(o.gate_)), admitted_(o.admitted_) { o.gate_.reset(); }
    Pass& operator=(Pass&& o) noexcept {
      if (this != &o) {
        release();
        gate_ = std::move(o.gate_);
        admitted_ = o.admitted_;
        o.gate_.reset();
      }
      return *this;
    }
    ~Pass() { release(); }
    explicit operator bool() const { return admitted_; }
    void release() {
      if (gate_) --gate_->held_;
      gate_.reset();
    }

   private:
    friend class LargeBodyGate;
    std::shared_ptr<LargeBodyGate> gate_;  // set while it holds a slot
    bool admitted_ = true;
  };

  // A body of `length` bytes (chunked, of unknown length: counted as large).
  Pass enter(uint64_t length, bool length_known = true) {
    Pass p;
    if (slots_ <= 0 || (length_known && length <= large_)) return p;
    if (++held_ > slots_) {
      --held_;
      p.admitted_ = false;
      return p;
    }
    p.gate_ = shared_from_this();
    return p;
  }

  // The refusal's message.
  std::string refusal() const {
    return "the server is reading " + std::to_string(slots_) + " request bodies over " +
           std::to_string(large_ >> 20) +
           " MiB already (--large-bodies); try again shortly, or send large rows as an upload "
           "(POST /datasets) or a file the workers read by path";
  }
  int held() const { return held_; }

 private:
  const uint64_t large_;
  const int slots_;
  std::atomic<int> held_{0};
};

}  // namespace lizard
