// HookProtocol: the frames that a daemon and its hook process (hook_host.h)
// exchange over a FrameChannel, defined once for both sides.  Binary and
// little-endian: the state and aggregate travel as the bytes of their
// SectionBuffers, the params as the bytes of the packed global_params_t, so
// that a call on the per-iteration path costs two copies and no parsing.
//
// The conversation:
//   helper → parent   ready{hooks} once the library is loaded (its static
//                     initialisers have run), or failed{message}
//   parent → helper   setup{params, state map, aggregate map, run values}: once per run
//   parent → helper   call{op, iteration, first section, second section}
//   helper → parent   result{value, section} or failed{message}
//
//   init_global_state     call{kInit, 0, state}            → result{1, state}
//   aggregate             call{kAggregate, it, running, partial}
//                                                          → result{1, running}
//   update_global_state   call{kUpdate, it, aggregate, state}
//                                                          → result{done, state}
//
// A section map says how the helper builds a hook's C struct over a section
// buffer: value members are copied in from the buffer (and back out after the
// hook), pointer members point into the helper's copy of the buffer.  Before
// each call the helper sets the library's lizard_hook_context (the generated
// header's) to the run's values and the call's iteration.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "program/layout.h"
#include "program/run_values.h"

namespace lizard {

// Which of the three hooks a host library defines.
struct HookSet {
  bool init = false;
  bool aggregate = false;
  bool update = false;
  bool any() const { return init || aggregate || update; }
};

enum class HookOp : uint8_t { kInit = 1, kAggregate = 2, kUpdate = 3 };

// The C name of the hook an op calls ("update_global_state").
const char* hook_name(HookOp op);

// How one section's C struct is laid over its buffer.
struct SectionMap {
  struct Member {
    uint64_t struct_offset = 0;
    uint64_t size = 0;         // bytes of a value member (8 for a pointer)
    uint64_t slot_offset = 0;  // where the field starts in the section buffer
    bool pointer = false;
  };
  uint64_t struct_size = 0;
  uint64_t section_size = 0;
  std::vector<Member> members;
};

// The map of `section` (made for `layout`'s fields); members without a field
// (placeholders) are left out and stay zero.
SectionMap section_map(const StructLayout& layout, const SectionBuffer& section);

struct HookSetup {
  std::string params;  // the packed global_params_t
  SectionMap state;
  SectionMap aggregate;
  RunValues values;  // the run's, for lizard_hook_context
};

// A decoded call; the sections are views into the received frame.
struct HookCall {
  HookOp op = HookOp::kInit;
  int64_t iteration = 0;
  std::string_view first;
  std::string_view second;
};

// A decoded result; `section` views the received frame.
struct HookResult {
  int32_t value = 0;
  std::string_view section;
};

// ---- frames -----------------------------------------------------------------
// Encoders that carry section bytes return only the frame's head: send it
// with the sections as further parts (FrameChannel::send_parts), uncopied.

std::string encode_ready(const HookSet& hooks);
std::string encode_failed(std::string_view message);
// The helper's first frame: the hooks, or the failure it reported.
Result<HookSet> decode_ready(std::string_view frame);

std::string encode_setup(const HookSetup& setup);
Result<HookSetup> decode_setup(std::string_view frame);
// True when `frame` is a setup frame (rather than a call).
bool is_setup_frame(std::string_view frame);

std::string encode_call_head(HookOp op, int64_t iteration, size_t first_size);
// The same into *out (replacing what it held): a buffer reused for every
// call allocates nothing.
void encode_call_head(HookOp op, int64_t iteration, size_t first_size, std::string* out);
Result<HookCall> decode_call(std::string_view frame);

std::string encode_result_head(int32_t value);
void encode_result_head(int32_t value, std::string* out);
// A failed frame decodes as an error carrying its message.
Result<HookResult> decode_result(std::string_view frame);

}  // namespace lizard
