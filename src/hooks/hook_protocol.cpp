#include "hooks/hook_protocol.h"

#include <cstring>

#include "common/byte_codec.h"

namespace lizard {
namespace {

// The first byte of every frame says what it is.
enum class Tag : uint8_t { kReady = 'R', kFailed = 'F', kSetup = 'S', kCall = 'C', kResult = 'O' };

// A frame of the hook protocol: its tag, then ByteWriter fields.
ByteWriter writer(Tag tag) {
  ByteWriter w;
  w.u8(static_cast<uint8_t>(tag));
  return w;
}

void write_map(ByteWriter* w, const SectionMap& m) {
  w->u64(m.struct_size);
  w->u64(m.section_size);
  w->u64(m.members.size());
  for (const auto& mem : m.members) {
    w->u64(mem.struct_offset);
    w->u64(mem.size);
    w->u64(mem.slot_offset);
    w->u8(mem.pointer ? 1 : 0);
  }
}

bool read_map(ByteReader* r, SectionMap* m) {
  m->struct_size = r->u64();
  m->section_size = r->u64();
  const uint64_t count = r->u64();
  if (!r->ok() || count > r->left() / 25) return false;  // 25 bytes a member
  m->members.resize(count);
  for (auto& mem : m->members) {
    mem.struct_offset = r->u64();
    mem.size = r->u64();
    mem.slot_offset = r->u64();
    mem.pointer = r->u8() != 0;
  }
  return r->ok();
}

// True when the frame is tagged `t` (and then reads past the tag).
bool tagged(ByteReader* r, Tag t) {
  return r->left() > 0 && r->u8() == static_cast<uint8_t>(t);
}

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
  ByteWriter w = writer(Tag::kReady);
  w.u8(static_cast<uint8_t>((hooks.init ? 1 : 0) | (hooks.aggregate ? 2 : 0) |
                            (hooks.update ? 4 : 0)));
  return std::move(w.out());
}

std::string encode_failed(std::string_view message) {
  ByteWriter w = writer(Tag::kFailed);
  w.bytes(message);
  return std::move(w.out());
}

namespace {

// A failed frame as the error it reports; any other frame as malformed.
Status failure_of(std::string_view frame, const char* expected) {
  ByteReader r(frame);
  if (tagged(&r, Tag::kFailed)) {
    std::string_view message = r.bytes();
    if (r.ok()) return runtime_error(std::string(message));
  }
  return malformed(expected);
}

}  // namespace

Result<HookSet> decode_ready(std::string_view frame) {
  ByteReader r(frame);
  if (!tagged(&r, Tag::kReady)) return failure_of(frame, "ready");
  const uint8_t bits = r.u8();
  if (!r.ok() || r.left() != 0) return malformed("ready");
  return HookSet{(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0};
}

std::string encode_setup(const HookSetup& setup) {
  ByteWriter w = writer(Tag::kSetup);
  w.bytes(setup.params);
  write_map(&w, setup.state);
  write_map(&w, setup.aggregate);
  for (const RunValueMember& v : run_value_members()) w.u64(setup.values.*v.member);
  return std::move(w.out());
}

bool is_setup_frame(std::string_view frame) {
  return !frame.empty() && static_cast<uint8_t>(frame[0]) == static_cast<uint8_t>(Tag::kSetup);
}

Result<HookSetup> decode_setup(std::string_view frame) {
  ByteReader r(frame);
  HookSetup s;
  if (!tagged(&r, Tag::kSetup)) return malformed("setup");
  const std::string_view params = r.bytes();
  if (!read_map(&r, &s.state) || !read_map(&r, &s.aggregate)) return malformed("setup");
  for (const RunValueMember& v : run_value_members()) s.values.*v.member = r.u64();
  if (!r.ok() || r.left() != 0 || !map_is_sound(s.state) || !map_is_sound(s.aggregate))
    return malformed("setup");
  s.params.assign(params.data(), params.size());
  return s;
}

std::string encode_call_head(HookOp op, int64_t iteration, size_t first_size) {
  std::string out;
  encode_call_head(op, iteration, first_size, &out);
  return out;
}

void encode_call_head(HookOp op, int64_t iteration, size_t first_size, std::string* out) {
  out->clear();
  ByteWriter w(out);
  w.u8(static_cast<uint8_t>(Tag::kCall));
  w.u8(static_cast<uint8_t>(op));
  w.i64(iteration);
  w.length(first_size);
}

Result<HookCall> decode_call(std::string_view frame) {
  ByteReader r(frame);
  HookCall c;
  if (!tagged(&r, Tag::kCall)) return malformed("call");
  const uint8_t op = r.u8();
  c.iteration = r.i64();
  c.first = r.bytes();
  if (!r.ok()) return malformed("call");
  if (op < static_cast<uint8_t>(HookOp::kInit) || op > static_cast<uint8_t>(HookOp::kUpdate))
    return malformed("call");
  c.op = static_cast<HookOp>(op);
  c.second = r.rest();
  return c;
}

std::string encode_result_head(int32_t value) {
  std::string out;
  encode_result_head(value, &out);
  return out;
}

void encode_result_head(int32_t value, std::string* out) {
  out->clear();
  ByteWriter w(out);
  w.u8(static_cast<uint8_t>(Tag::kResult));
  w.i32(value);
}

Result<HookResult> decode_result(std::string_view frame) {
  ByteReader r(frame);
  HookResult res;
  if (!tagged(&r, Tag::kResult)) return failure_of(frame, "result");
  res.value = r.i32();
  if (!r.ok()) return malformed("result");
  res.section = r.rest();
  return res;
}

}  // namespace lizard
