// The wire protocol between the server's worker hub and worker daemons.
//
// Every message is one binary WebSocket frame:
//
//   "LZ" | version (1 byte) | type (1 byte) | header length (u32 LE) | header | payload
//
// The header is a small JSON object (ids, sizes, names); the payload carries
// arrays as raw little-endian bytes, so data never passes through JSON or
// base64.  Both daemons use encode()/decode(); nothing else knows the framing.
//
//   std::string frame = encode(Message{MessageType::kIterate, {{"run_id", id}}, state_bytes});
//   Result<Message> m = decode(frame);
//
// The payload is the rest of the frame, so a frame is also the encoding of its
// message with an empty payload followed by the payload bytes: bulk rows can
// be sent from where they lie without being copied.  decode_view() points
// into the frame instead of copying the payload out.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace lizard {

inline constexpr uint8_t kWireVersion = 1;

enum class MessageType : uint8_t {
  kHello = 1,          // worker → server: hardware report {hostname, cpu, executors, backend}
  kWelcome = 2,        // server → worker: {worker_id}
  kProgram = 3,        // server → worker: {hash, bundle}
  kProgramStatus = 4,  // worker → server: {hash, ok, error}
  kRunStart = 5,       // server → worker: {run_id, hash, params, parts, fields, progress};
                       // payload: inline rows
  kRunReady = 6,       // worker → server: {run_id, ok, error}
  kIterate = 7,        // server → worker: {run_id, iteration}; payload: state section
  kIterationResult =
      8,  // worker → server: {run_id, iteration, ok, error, parts, kernel_ms}; payload: aggregates
  kRunEnd = 9,  // server → worker: {run_id, want_outputs}
  kRunOutputs =
      10,  // worker → server: {run_id, ok, error, fields: [{name, bytes}]}; payload: outputs
  kHeartbeat = 11,  // both ways: {}
  kDataChunk = 12,  // server → worker, before kRunStart: {run_id, field, offset, bytes, total};
                    // payload: rows
  kProgress = 13,   // worker → server, within an iteration: {run_id, iteration, executor,
                    // rows_done}
  kResources = 14,  // worker → server, when idle: {free_memory: [bytes, per executor]}
};

const char* message_type_name(MessageType t);

struct Message {
  MessageType type = MessageType::kHeartbeat;
  nlohmann::json header = nlohmann::json::object();
  std::string payload;
};

// A decoded frame whose payload still lies in the frame it was decoded from.
struct MessageView {
  MessageType type = MessageType::kHeartbeat;
  nlohmann::json header = nlohmann::json::object();
  std::string_view payload;
};

std::string encode(const Message& m);
// Rejects frames that are short, of another version, of an unknown type, or
// whose header is not a JSON object.  Never throws.
Result<Message> decode(std::string_view frame);
// As decode(), without copying the payload: valid while `frame` is.
Result<MessageView> decode_view(std::string_view frame);

}  // namespace lizard
