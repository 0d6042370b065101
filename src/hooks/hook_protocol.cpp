#include "hooks/hook_protocol.h"

#include <cstring>

namespace lizard {
namespace {

// The first byte of every frame says what it is.
enum class Tag : uint8_t { kReady = 'R', kFailed = 'F', kSetup = 'S', kCall = 'C', kResult = 'O' };

class Writer {
 public:
  explicit Writer(Tag tag) { out_.push_back(static_cast<char>(tag)); }
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void i32(int32_t v) {
    const auto u = static_cast<uint32_t>(v);
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
  }
  void bytes(std::string_view b) {
    u64(b.size());
    out_.append(b.data(), b.size());
  }
  void map(const SectionMap& m) {
    u64(m.struct_size);
    u64(m.section_size);
    u64(m.members.size());
    for (const auto& mem : m.members) {
      u64(mem.struct_offset);
      u64(mem.size);
      u64(mem.slot_offset);
      u8(mem.pointer ? 1 : 0);
    }
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool tag(Tag t) {
    if (in_.empty() || static_cast<uint8_t>(in_[0]) != static_cast<uint8_t>(t)) return false;
    in_.remove_prefix(1);
    return true;
  }
  bool u8(uint8_t* v) {
    if (in_.empty()) return false;
    *v = static_cast<uint8_t>(in_[0]);
    in_.remove_prefix(1);
    return true;
  }
  bool u64(uint64_t* v) {
    if (in_.size() < 8) return false;
    *v = 0;
    for (int i = 0; i < 8; ++i) *v |= uint64_t{static_cast<unsigned char>(in_[i])} << (8 * i);
    in_.remove_prefix(8);
    return true;
  }
  bool i64(int64_t* v) {
    uint64_t u = 0;
    if (!u64(&u)) return false;
    *v = static_cast<int64_t>(u);
    return true;
  }
  bool i32(int32_t* v) {
    if (in_.size() < 4) return false;
    uint32_t u = 0;
    for (int i = 0; i < 4; ++i) u |= uint32_t{static_cast<unsigned char>(in_[i])} << (8 * i);
    *v = static_cast<int32_t>(u);
    in_.remove_prefix(4);
    return true;
  }
  bool bytes(std::string_view* b, uint64_t n) {
    if (in_.size() < n) return false;
    *b = in_.substr(0, n);
    in_.remove_prefix(n);
    return true;
  }
  bool bytes(std::string_view* b) {
    uint64_t n = 0;
    return u64(&n) && bytes(b, n);
  }
  bool map(SectionMap* m) {
    uint64_t count = 0;
    if (!u64(&m->struct_size) || !u64(&m->section_size) || !u64(&count)) return false;
    if (count > in_.size() / 25) return false;  // 25 bytes a member
    m->members.resize(count);
    for (auto& mem : m->members) {
      uint8_t pointer = 0;
      if (!u64(&mem.struct_offset) || !u64(&mem.size) || !u64(&mem.slot_offset) || !u8(&pointer))
        return false;
      mem.pointer = pointer != 0;
    }
    return true;
  }
  std::string_view rest() const { return in_; }
  bool done() const { return in_.empty(); }

 private:
  std::string_view in_;
};

Status malformed(const char* what) {
  return internal_error(std::string("a malformed ") + what + " frame in the hook protocol");
}

// Every member must lie inside its struct and its field inside the buffer.
bool map_is_sound(const SectionMap& m) {
  for (const auto& mem : m.members) {
    const uint64_t size = mem.pointer ? 8 : mem.size;
    if (mem.struct_offset > m.struct_size || size > m.struct_size - mem.struct_offset) return false;
    if (mem.slot_offset > m.section_size) return false;
    if (!mem.pointer && mem.size > m.section_size - mem.slot_offset) return false;
  }
  return true;
}

}  // namespace

const char* hook_name(HookOp op) {
  switch (op) {
    case HookOp::kInit:
      return "init_global_state";
    case HookOp::kAggregate:
      return "aggregate";
    case HookOp::kUpdate:
      return "update_global_state";
  }
  return "?";
}

SectionMap section_map(const StructLayout& layout, const SectionBuffer& section) {
  SectionMap m;
  m.struct_size = layout.size;
  m.section_size = section.bytes.size();
  for (const auto& mem : layout.members) {
    const FieldSlot* slot = section.find(mem.name);
    if (!slot) continue;
    m.members.push_back({mem.offset, mem.pointer ? 8 : mem.size, slot->offset, mem.pointer});
  }
  return m;
}

std::string encode_ready(const HookSet& hooks) {
  Writer w(Tag::kReady);
  w.u8(static_cast<uint8_t>((hooks.init ? 1 : 0) | (hooks.aggregate ? 2 : 0) |
                            (hooks.update ? 4 : 0)));
  return w.take();
}

std::string encode_failed(std::string_view message) {
  Writer w(Tag::kFailed);
  w.bytes(message);
  return w.take();
}

namespace {

// A failed frame as the error it reports; any other frame as malformed.
Status failure_of(std::string_view frame, const char* expected) {
  Reader r(frame);
  std::string_view message;
  if (r.tag(Tag::kFailed) && r.bytes(&message)) return runtime_error(std::string(message));
  return malformed(expected);
}

}  // namespace

Result<HookSet> decode_ready(std::string_view frame) {
  Reader r(frame);
  uint8_t bits = 0;
  if (!r.tag(Tag::kReady)) return failure_of(frame, "ready");
  if (!r.u8(&bits) || !r.done()) return malformed("ready");
  return HookSet{(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0};
}

std::string encode_setup(const HookSetup& setup) {
  Writer w(Tag::kSetup);
  w.bytes(setup.params);
  w.map(setup.state);
  w.map(setup.aggregate);
  return w.take();
}

bool is_setup_frame(std::string_view frame) {
  return !frame.empty() && static_cast<uint8_t>(frame[0]) == static_cast<uint8_t>(Tag::kSetup);
}

Result<HookSetup> decode_setup(std::string_view frame) {
  Reader r(frame);
  HookSetup s;
  std::string_view params;
  if (!r.tag(Tag::kSetup) || !r.bytes(&params) || !r.map(&s.state) || !r.map(&s.aggregate) ||
      !r.done() || !map_is_sound(s.state) || !map_is_sound(s.aggregate))
    return malformed("setup");
  s.params.assign(params.data(), params.size());
  return s;
}

std::string encode_call_head(HookOp op, int64_t iteration, size_t first_size) {
  Writer w(Tag::kCall);
  w.u8(static_cast<uint8_t>(op));
  w.i64(iteration);
  w.u64(first_size);
  return w.take();
}

Result<HookCall> decode_call(std::string_view frame) {
  Reader r(frame);
  HookCall c;
  uint8_t op = 0;
  if (!r.tag(Tag::kCall) || !r.u8(&op) || !r.i64(&c.iteration) || !r.bytes(&c.first))
    return malformed("call");
  if (op < static_cast<uint8_t>(HookOp::kInit) || op > static_cast<uint8_t>(HookOp::kUpdate))
    return malformed("call");
  c.op = static_cast<HookOp>(op);
  c.second = r.rest();
  return c;
}

std::string encode_result_head(int32_t value) {
  Writer w(Tag::kResult);
  w.i32(value);
  return w.take();
}

Result<HookResult> decode_result(std::string_view frame) {
  Reader r(frame);
  HookResult res;
  if (!r.tag(Tag::kResult)) return failure_of(frame, "result");
  if (!r.i32(&res.value)) return malformed("result");
  res.section = r.rest();
  return res;
}

}  // namespace lizard
