#include "protocol/iteration_messages.h"

#include <utility>

#include "common/byte_codec.h"

namespace lizard {
namespace {

Message packed_message(MessageType type, ByteWriter* w, std::string payload) {
  Message m;
  m.type = type;
  m.packed = std::move(w->out());
  m.payload = std::move(payload);
  return m;
}

// Reads a packed header's fields.  The header must hold them exactly, flags
// as 0 or 1: anything else means the two sides disagree on the layout.
class PackedReader {
 public:
  explicit PackedReader(std::string_view packed) : r_(packed) {}
  std::string str() { return r_.str(); }
  int64_t i64() { return r_.i64(); }
  double f64() { return r_.f64(); }
  bool flag() {
    const uint8_t v = r_.u8();
    bad_flag_ = bad_flag_ || v > 1;
    return v == 1;
  }

  template <typename T>
  Result<T> finish(const char* what, T v) const {
    if (r_.ok() && r_.left() == 0 && !bad_flag_) return v;
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

}  // namespace

Message IterateMsg::to_message(std::string payload) const {
  ByteWriter w;
  w.bytes(run_id);
  w.i64(iteration);
  return packed_message(MessageType::kIterate, &w, std::move(payload));
}
Result<IterateMsg> IterateMsg::parse(std::string_view packed) {
  PackedReader r(packed);
  IterateMsg m;
  m.run_id = r.str();
  m.iteration = r.i64();
  return r.finish("iterate", std::move(m));
}

Message IterationResultMsg::to_message(std::string payload) const {
  ByteWriter w;
  w.bytes(run_id);
  w.i64(iteration);
  w.u8(ok ? 1 : 0);
  w.f64(kernel_ms);
  w.bytes(error);
  return packed_message(MessageType::kIterationResult, &w, std::move(payload));
}
Result<IterationResultMsg> IterationResultMsg::parse(std::string_view packed) {
  PackedReader r(packed);
  IterationResultMsg m;
  m.run_id = r.str();
  m.iteration = r.i64();
  m.ok = r.flag();
  m.kernel_ms = r.f64();
  m.error = r.str();
  return r.finish("iteration_result", std::move(m));
}

Message LoopStepMsg::to_message(std::string payload) const {
  ByteWriter w;
  w.bytes(run_id);
  w.i64(iteration);
  w.u8(ok ? 1 : 0);
  w.u8(unsupported ? 1 : 0);
  w.u8(last ? 1 : 0);
  w.f64(kernel_ms);
  w.f64(ms);
  w.bytes(error);
  return packed_message(MessageType::kLoopStep, &w, std::move(payload));
}
Result<LoopStepMsg> LoopStepMsg::parse(std::string_view packed) {
  PackedReader r(packed);
  LoopStepMsg m;
  m.run_id = r.str();
  m.iteration = r.i64();
  m.ok = r.flag();
  m.unsupported = r.flag();
  m.last = r.flag();
  m.kernel_ms = r.f64();
  m.ms = r.f64();
  m.error = r.str();
  return r.finish("loop_step", std::move(m));
}

std::string_view packed_run_id(std::string_view packed) {
  ByteReader r(packed);
  const std::string_view id = r.bytes();
  return r.ok() ? id : std::string_view();
}

}  // namespace lizard
