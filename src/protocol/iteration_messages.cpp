#include "protocol/iteration_messages.h"

#include <utility>

#include "common/byte_codec.h"

namespace lizard {
namespace {

// Reads a packed header's fields.  The header must hold them exactly, flags
// as 0 or 1: anything else means the two sides disagree on the layout.
class PackedReader {
 public:
  explicit PackedReader(std::string_view packed) : r_(packed) {}
  void str(std::string* into) {  // assigned: the string's capacity is reused
    const std::string_view b = r_.bytes();
    into->assign(b.data(), b.size());
  }
  int64_t i64() { return r_.i64(); }
  double f64() { return r_.f64(); }
  bool flag() {
    const uint8_t v = r_.u8();
    bad_flag_ = bad_flag_ || v > 1;
    return v == 1;
  }

  Status finish(const char* what) const {
    if (r_.ok() && r_.left() == 0 && !bad_flag_) return Status::Ok();
    const std::string head = std::string(what) + ": packed header ";
    if (!r_.ok()) return invalid_argument(head + "is truncated");
    if (r_.left() != 0)
      return invalid_argument(head + "has " + std::to_string(r_.left()) + " bytes too many");
    return invalid_argument(head + "has a flag that is neither 0 nor 1");
  }

 private:
  ByteReader r_;
  bool bad_flag_ = false;
};

// What the three messages share, through each one's write() and read().
template <typename Msg>
Message packed_message(const Msg& msg, MessageType type, std::string payload) {
  Message m;
  m.type = type;
  ByteWriter w(&m.packed);
  msg.write(&w);
  m.payload = std::move(payload);
  return m;
}

template <typename Msg>
void encode_packed(const Msg& msg, MessageType type, std::string* frame,
                   const std::string_view* payload, size_t parts) {
  const size_t start = begin_packed_frame(type, frame);
  ByteWriter w(frame);
  msg.write(&w);
  finish_packed_frame(start, payload, parts, frame);
}

template <typename Msg>
Result<Msg> parse_packed(std::string_view packed) {
  Msg m;
  LIZARD_RETURN_IF_ERROR(m.read(packed));
  return m;
}

}  // namespace

void IterateMsg::write(ByteWriter* w) const {
  w->bytes(run_id);
  w->i64(iteration);
}
Status IterateMsg::read(std::string_view packed) {
  PackedReader r(packed);
  r.str(&run_id);
  iteration = r.i64();
  return r.finish("iterate");
}

void IterationResultMsg::write(ByteWriter* w) const {
  w->bytes(run_id);
  w->i64(iteration);
  w->u8(ok ? 1 : 0);
  w->f64(kernel_ms);
  w->bytes(error);
  w->u8(quick_build ? 1 : 0);
  w->i64(workers);
  w->u8(fold_failed ? 1 : 0);
}
Status IterationResultMsg::read(std::string_view packed) {
  PackedReader r(packed);
  r.str(&run_id);
  iteration = r.i64();
  ok = r.flag();
  kernel_ms = r.f64();
  r.str(&error);
  quick_build = r.flag();
  workers = r.i64();
  fold_failed = r.flag();
  return r.finish("iteration_result");
}

void LoopStepMsg::write(ByteWriter* w) const {
  w->bytes(run_id);
  w->i64(iteration);
  w->u8(ok ? 1 : 0);
  w->u8(unsupported ? 1 : 0);
  w->u8(last ? 1 : 0);
  w->f64(kernel_ms);
  w->f64(ms);
  w->f64(fold_ms);
  w->bytes(error);
  w->u8(quick_build ? 1 : 0);
}
Status LoopStepMsg::read(std::string_view packed) {
  PackedReader r(packed);
  r.str(&run_id);
  iteration = r.i64();
  ok = r.flag();
  unsupported = r.flag();
  last = r.flag();
  kernel_ms = r.f64();
  ms = r.f64();
  fold_ms = r.f64();
  r.str(&error);
  quick_build = r.flag();
  return r.finish("loop_step");
}

Message IterateMsg::to_message(std::string payload) const {
  return packed_message(*this, MessageType::kIterate, std::move(payload));
}
void IterateMsg::encode_into(std::string* frame, const std::string_view* payload,
                             size_t parts) const {
  encode_packed(*this, MessageType::kIterate, frame, payload, parts);
}
Result<IterateMsg> IterateMsg::parse(std::string_view packed) {
  return parse_packed<IterateMsg>(packed);
}

Message IterationResultMsg::to_message(std::string payload) const {
  return packed_message(*this, MessageType::kIterationResult, std::move(payload));
}
void IterationResultMsg::encode_into(std::string* frame, const std::string_view* payload,
                                     size_t parts) const {
  encode_packed(*this, MessageType::kIterationResult, frame, payload, parts);
}
Result<IterationResultMsg> IterationResultMsg::parse(std::string_view packed) {
  return parse_packed<IterationResultMsg>(packed);
}

Message LoopStepMsg::to_message(std::string payload) const {
  return packed_message(*this, MessageType::kLoopStep, std::move(payload));
}
void LoopStepMsg::encode_into(std::string* frame, const std::string_view* payload,
                              size_t parts) const {
  encode_packed(*this, MessageType::kLoopStep, frame, payload, parts);
}
Result<LoopStepMsg> LoopStepMsg::parse(std::string_view packed) {
  return parse_packed<LoopStepMsg>(packed);
}

std::string_view packed_run_id(std::string_view packed) {
  ByteReader r(packed);
  const std::string_view id = r.bytes();
  return r.ok() ? id : std::string_view();
}

}  // namespace lizard
