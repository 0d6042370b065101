// libFuzzer target: the worker wire protocol.  The input is one frame; when
// decode() accepts it, the message must survive encode() and decode() again
// unchanged (type, header, packed header, payload), and encoding is then
// stable.  A packed header its typed message accepts must be written back
// the same by that message, and a JSON header its typed message accepts
// must read back the same after that message writes it (message_schemas.h).
//
//   build-fuzz/tests/fuzz/fuzz_wire CORPUS tests/fuzz/corpus/wire
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "protocol/message_schemas.h"
#include "protocol/messages.h"

namespace {

[[noreturn]] void fail(const char* what, const lizard::Message& m) {
  std::fprintf(stderr, "wire round trip: %s (type %s, header %s, payload %zu bytes)\n", what,
               lizard::message_type_name(m.type), m.header.dump().c_str(), m.payload.size());
  std::abort();
}

template <typename T>
void repacks(const lizard::Message& m) {
  auto typed = T::parse(m.packed);
  if (typed.ok() && typed->to_message().packed != m.packed) fail("packed header not kept", m);
}

void check_packed(const lizard::Message& m) {
  switch (m.type) {
    case lizard::MessageType::kIterate:
      return repacks<lizard::IterateMsg>(m);
    case lizard::MessageType::kIterationResult:
      return repacks<lizard::IterationResultMsg>(m);
    case lizard::MessageType::kLoopStep:
      return repacks<lizard::LoopStepMsg>(m);
    default:
      return;
  }
}

// Each message's schema: what it accepts, written again, reads back the same.
void check_typed(const lizard::Message& m) {
  lizard::for_each_message_schema([&](auto tag) {
    using S = typename decltype(tag)::type;
    if (S::kType != m.type) return;
    auto typed = S::Type::parse(m.header);
    if (!typed.ok()) return;
    const nlohmann::json again = lizard::to_header(*typed);
    auto back = S::Type::parse(again);
    if (!back.ok() || lizard::to_header(*back) != again) fail("typed header not kept", m);
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view frame(reinterpret_cast<const char*>(data), size);
  lizard::Result<lizard::Message> m = lizard::decode(frame);
  if (!m.ok()) return 0;
  const std::string again = lizard::encode(*m);
  lizard::Result<lizard::Message> back = lizard::decode(again);
  if (!back.ok()) fail(("re-encoded frame rejected: " + back.status().message()).c_str(), *m);
  if (back->type != m->type) fail("type changed", *m);
  if (back->header != m->header) fail("header changed", *m);
  if (back->packed != m->packed) fail("packed header changed", *m);
  if (back->payload != m->payload) fail("payload changed", *m);
  if (lizard::encode(*back) != again) fail("encoding is not stable", *m);
  check_packed(*m);
  check_typed(*m);
  (void)lizard::wire_run_id_of(*m);
  (void)lizard::reported_error(*m);
  return 0;
}
