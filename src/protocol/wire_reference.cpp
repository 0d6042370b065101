#include "protocol/wire_reference.h"

#include <sstream>
#include <string>
#include <vector>

#include "protocol/iteration_messages.h"
#include "protocol/message_schemas.h"

namespace lizard {
namespace {

using wire_schema::FieldDoc;
using wire_schema::Presence;

const char* kIntro = R"(# Wire protocol reference

<!-- Written from src/protocol/message_schemas.h and iteration_messages.h by
     LIZARD_WRITE_DOCS=1 build/tests/lizard_unit_tests --gtest_filter='WireReference.*'
     never by hand; a unit test checks that it is current. -->

The messages between the server's worker hub and worker daemons. Each is one
lizard frame (magic `LZ`, wire version, type, header length, header, payload;
see [the architecture](architecture.md#the-wire-protocol)). This build speaks
wire version )";

const char* presence(const FieldDoc& f) {
  switch (f.presence) {
    case Presence::kRequired:
      return "required";
    case Presence::kOptional:
      return "optional";
    case Presence::kOmittedWhenEmpty:
      return "sent when not empty";
  }
  return "";
}

std::string anchor(const std::string& name) {
  return "#" + name;
}

void field_table(const std::vector<FieldDoc>& fields, std::ostringstream& out) {
  if (fields.empty()) {
    out << "No fields: the header is `{}`.\n";
    return;
  }
  out << "| field | type | presence | meaning |\n| --- | --- | --- | --- |\n";
  for (const FieldDoc& f : fields) {
    out << "| `" << f.name << "` | " << f.type << " | " << presence(f);
    if (!f.default_value.empty()) out << ", default `" << f.default_value << "`";
    out << " | " << f.doc << " |\n";
  }
}

const char* packed_type(PackedType t) {
  switch (t) {
    case PackedType::kString:
      return "string";
    case PackedType::kInt64:
      return "int64";
    case PackedType::kDouble:
      return "double";
    case PackedType::kFlag:
      return "flag";
  }
  return "";
}

template <size_t N>
void packed_table(const PackedField (&layout)[N], std::ostringstream& out) {
  out << "| # | field | type | meaning |\n| --- | --- | --- | --- |\n";
  for (size_t i = 0; i < N; ++i)
    out << "| " << i + 1 << " | `" << layout[i].name << "` | " << packed_type(layout[i].type)
        << " | " << layout[i].doc << " |\n";
}

void message_heading(MessageType t, std::ostringstream& out) {
  out << "\n### " << message_type_name(t) << "\n\nType " << static_cast<int>(t) << ", "
      << message_direction(t) << ". Payload: " << message_payload(t) << ".\n\n";
}

void type_table(std::ostringstream& out) {
  out << "| type | name | direction | header | payload |\n| --- | --- | --- | --- | --- |\n";
  for (int n = 1; n < 256; ++n) {
    const auto t = static_cast<MessageType>(n);
    const std::string name = message_type_name(t);
    if (name == "unknown") continue;
    out << "| " << n << " | [`" << name << "`](" << anchor(name) << ") | " << message_direction(t)
        << " | " << (has_packed_header(t) ? "packed" : "JSON") << " | " << message_payload(t)
        << " |\n";
  }
}

}  // namespace

std::string wire_reference_markdown() {
  std::ostringstream out;
  out << kIntro << "`" << int(kWireVersion) << "`.\n\n";
  out << "A worker states its version in `hello`; a server of another version answers with a\n"
         "`welcome` whose `refused` names both versions, and closes the connection. Frames\n"
         "of another version are otherwise refused. In a JSON header, keys not listed here\n"
         "are ignored, and a missing required field fails the message with an error naming\n"
         "it (`run_ready: missing required field \"ok\"`).\n\n";
  out << "## Messages\n\n";
  type_table(out);
  out << "\n## JSON headers\n";
  for_each_message_schema([&](auto tag) {
    using S = typename decltype(tag)::type;
    message_heading(S::kType, out);
    out << S::kDoc << "\n\n";
    field_table(wire_schema::describe_fields<S>(), out);
  });
  message_heading(MessageType::kHeartbeat, out);
  out << "Defined, ignored by the server and not sent: liveness comes from WebSocket pings.\n\n";
  field_table({}, out);
  out << "\n## Objects inside headers\n";
  for_each_object_schema([&](auto tag) {
    using S = typename decltype(tag)::type;
    out << "\n### " << S::kName << "\n\n";
    field_table(wire_schema::describe_fields<S>(), out);
  });
  out << "\n`executor` is an executor as `GET /clients` shows it. `field_source` is `name`,\n"
         "`source` (`inline` {`offset`, `bytes`}, `path` {`path`, `format`}, `chunks`,\n"
         "`cached` {`upload`, and `path`, `format` of the server's copy}, `generate` {`kernel`} or "
         "`none`) and that source's keys.\n"
         "`kept_rows` is `key`, `description`, `bytes`, and where the source is known\n"
         "`source` and `rows` [begin, end).\n";
  out << "\n## Packed headers\n\n"
         "The messages of every iteration carry their fields packed, in this order: strings\n"
         "as an 8-byte length and the bytes, integers as 8 bytes and doubles as IEEE 754,\n"
         "little-endian, flags as one byte (0 or 1). A header that is short, longer than its\n"
         "fields, or has another flag value fails the iteration.\n";
  message_heading(MessageType::kIterate, out);
  packed_table(kIterateLayout, out);
  message_heading(MessageType::kIterationResult, out);
  packed_table(kIterationResultLayout, out);
  message_heading(MessageType::kLoopStep, out);
  packed_table(kLoopStepLayout, out);
  return out.str();
}

}  // namespace lizard
