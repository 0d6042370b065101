// The wire protocol between the server's worker hub and worker daemons.
//
// Every message is one binary WebSocket message (net/ws_channel.h):
//
//   "LZ" | version (1 byte) | type (1 byte) | header length (u32 LE) | header | payload
//
// The header is a small JSON object (ids, sizes, names), except for the
// messages of every iteration (iterate, iteration_result, loop_step): theirs
// is packed binary (protocol/iteration_messages.h), so an iteration's round
// trip parses no JSON.  The payload carries arrays as raw little-endian
// bytes, so data never passes through JSON or base64.  Both daemons build
// and read headers through the typed structs of protocol/messages.h, whose
// fields are listed once in protocol/message_schemas.h, and which use
// encode()/decode(); nothing else knows the framing.
//
//   std::string frame = encode(IterateMsg{wire_id, it}.to_message(state_bytes));
//   Result<Message> m = decode(frame);
//
// The payload is the rest of the frame, so a frame is also the encoding of its
// message with an empty payload followed by the payload bytes: bulk rows can
// be sent from where they lie without being copied.  decode_view() points
// into the frame instead of copying the payload out.
//
// A `run_id` on the wire names one attempt of a run: "r3.0", then "r3.1"
// after a re-plan (run_of_wire_id() gives the run).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "common/status.h"

namespace lizard {

inline constexpr uint8_t kWireVersion = 4;

// Every message type: its enum name, number on the wire, name, direction
// and payload.  The fields of each JSON header are listed once, in
// protocol/message_schemas.h; the packed headers' in iteration_messages.h.
// docs/wire-protocol.md is generated from both (protocol/wire_reference.h).
// The frame head, hello (1) and welcome (2) keep their meaning in every
// version, so that two daemons of different versions can tell each other so.
#define LIZARD_MESSAGE_TYPES(X)                                                                  \
  X(kHello, 1, "hello", "worker → server", "—")                                                  \
  X(kWelcome, 2, "welcome", "server → worker", "—")                                              \
  X(kProgram, 3, "program", "server → worker", "—")                                              \
  X(kProgramStatus, 4, "program_status", "worker → server", "—")                                 \
  X(kRunStart, 5, "run_start", "server → worker", "the inline fields' rows, field after field")  \
  X(kRunReady, 6, "run_ready", "worker → server", "—")                                           \
  X(kIterate, 7, "iterate", "server → worker", "the state section")                              \
  X(kIterationResult, 8, "iteration_result", "worker → server",                                  \
    "aggregate sections: one folded (built-in reducers), or one per executor or slice (custom)") \
  X(kRunEnd, 9, "run_end", "server → worker", "—")                                               \
  X(kRunOutputs, 10, "run_outputs", "worker → server", "the output fields, field after field")   \
  X(kHeartbeat, 11, "heartbeat", "either", "—")                                                  \
  X(kDataChunk, 12, "data_chunk", "server → worker", "rows of an uploaded field")                \
  X(kProgress, 13, "progress", "worker → server", "—")                                           \
  X(kResources, 14, "resources", "worker → server", "—")                                         \
  X(kRunAbort, 15, "run_abort", "server → worker", "—")                                          \
  X(kLoop, 16, "loop", "server → worker", "the state section")                                   \
  X(kLoopStep, 17, "loop_step", "worker → server",                                               \
    "the folded aggregate section, then the state section the update hook left")                 \
  X(kStageRows, 18, "stage_rows", "server → worker", "—")                                        \
  X(kRowsStaged, 19, "rows_staged", "worker → server", "—")                                      \
  X(kDropRows, 20, "drop_rows", "server → worker", "—")                                          \
  X(kBuildAhead, 21, "build_ahead", "server → worker", "—")                                      \
  X(kLogChunk, 22, "log_chunk", "worker → server", "—")                                          \
  X(kProbeFile, 23, "probe_file", "server → worker", "—")                                        \
  X(kFileProbed, 24, "file_probed", "worker → server", "—")                                      \
  X(kBuildOffer, 25, "build_offer", "worker → server", "the build's bytes")                      \
  X(kBuildFetch, 26, "build_fetch", "worker → server", "—")                                      \
  X(kBuildFetched, 27, "build_fetched", "server → worker", "the build's bytes, when found")      \
  X(kProgramRemoved, 28, "program_removed", "server → worker", "—")

enum class MessageType : uint8_t {
#define LIZARD_MESSAGE_ENUM(e, n, name, direction, payload) e = n,
  LIZARD_MESSAGE_TYPES(LIZARD_MESSAGE_ENUM)
#undef LIZARD_MESSAGE_ENUM
};

// Which way a message goes, and what its payload holds ("—": none).
const char* message_direction(MessageType t);
const char* message_payload(MessageType t);
const char* message_type_name(MessageType t);
// Whether messages of type `t` have a packed header instead of a JSON one.
bool has_packed_header(MessageType t);

struct Message {
  Message() = default;
  Message(MessageType t, nlohmann::json h, std::string p = {}, std::string pk = {})
      : type(t), header(std::move(h)), payload(std::move(p)), packed(std::move(pk)) {}

  MessageType type = MessageType::kHeartbeat;
  nlohmann::json header = nlohmann::json::object();  // unused where the header is packed
  std::string payload;
  std::string packed;  // the header, where has_packed_header(type)
};

// A decoded frame whose payload (and packed header) still lie in the frame
// it was decoded from.
struct MessageView {
  MessageType type = MessageType::kHeartbeat;
  nlohmann::json header;  // null where the header is packed: nothing allocated
  std::string_view payload;
  std::string_view packed;
};

std::string encode(const Message& m);
// The same frame with the payload given as `parts` joined (m.payload empty):
// a large payload copied once, into the frame.
std::string encode(const Message& m, const std::string_view* parts, size_t count);
// A frame of a message whose header is packed, built in *frame (cleared; its
// capacity kept, so a buffer reused for every iteration allocates nothing):
// begin_packed_frame() writes the frame's head and returns where the header
// starts; the caller appends the header's bytes; finish_packed_frame() sets
// the header's length and appends the payload, given as `parts` joined.
size_t begin_packed_frame(MessageType type, std::string* frame);
void finish_packed_frame(size_t header_start, const std::string_view* parts, size_t count,
                         std::string* frame);
// Rejects frames that are short, of another version, of an unknown type, or
// whose header is not a JSON object.  Never throws.
Result<Message> decode(std::string_view frame);
// As decode(), without copying the payload: valid while `frame` is.
Result<MessageView> decode_view(std::string_view frame);
// A frame's type, from its first bytes alone (its header is not read): for
// a daemon's io thread that routes frames by type.  The errors of decode().
Result<MessageType> frame_type(std::string_view frame);

// A hello or welcome frame of any wire version, read as far as every
// version agrees (the frame head and a JSON header), so that a daemon can
// name the other side's version when decode() refuses its frames.
struct HandshakeFrame {
  uint8_t version = 0;
  MessageType type = MessageType::kHello;
  nlohmann::json header;
};
Result<HandshakeFrame> decode_handshake(std::string_view frame);

}  // namespace lizard
