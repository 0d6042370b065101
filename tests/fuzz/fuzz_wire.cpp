// libFuzzer target: the worker wire protocol.  The input is one frame; when
// decode() accepts it, the message must survive encode() and decode() again
// unchanged (type, header, payload), and encoding is then stable.
//
//   build-fuzz/tests/fuzz/fuzz_wire CORPUS tests/fuzz/corpus/wire
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "protocol/wire.h"

namespace {

[[noreturn]] void fail(const char* what, const lizard::Message& m) {
  std::fprintf(stderr, "wire round trip: %s (type %s, header %s, payload %zu bytes)\n", what,
               lizard::message_type_name(m.type), m.header.dump().c_str(), m.payload.size());
  std::abort();
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
  if (back->payload != m->payload) fail("payload changed", *m);
  if (lizard::encode(*back) != again) fail("encoding is not stable", *m);
  return 0;
}
