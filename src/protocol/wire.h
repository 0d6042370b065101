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
// and read headers through the typed structs of protocol/messages.h, which
// use encode()/decode(); nothing else knows the framing.
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

inline constexpr uint8_t kWireVersion = 2;

// What each header holds (messages.h has the structs); "?" marks a key sent
// only sometimes.
enum class MessageType : uint8_t {
  // worker → server, once per connection: {hostname, version, backend,
  // backend_note, cpu: {model, threads}, executors: [ExecutorInfo], slurm_job_id?}
  kHello = 1,
  // server → worker, in answer to hello: {worker_id}
  kWelcome = 2,
  // server → worker, each registered program: {hash, bundle: {config, sources}}
  kProgram = 3,
  // worker → server, once the program is built on every executor (or not): {hash, ok, error}
  kProgramStatus = 4,
  // server → worker: {run_id, hash, params, seed, first_row, rows,
  // parts: [{executor, first_row, rows}], fields: [{name, source: inline {offset, bytes} |
  // path {path, format} | generate {kernel} | chunks | none}], progress};
  // payload: the inline fields' rows, field after field
  kRunStart = 5,
  // worker → server, rows loaded: {run_id, ok, error, compile_ms, compile_cache_hit}
  kRunReady = 6,
  // server → worker, packed: run_id, iteration; payload: the state section
  kIterate = 7,
  // worker → server, packed: run_id, iteration, ok, kernel_ms, error; payload: aggregate
  // sections, one folded (built-in reducers) or one per executor or slice (custom)
  kIterationResult = 8,
  // server → worker: {run_id, want_outputs, outputs: [field names]}
  kRunEnd = 9,
  // worker → server, when outputs were wanted: {run_id, ok, error, fields: [{name, bytes}]};
  // payload: the fields' rows, field after field
  kRunOutputs = 10,
  // either way: {}.  Defined but not sent; liveness comes from WebSocket pings
  kHeartbeat = 11,
  // server → worker, before run_start: {run_id, field, offset, bytes, total};
  // payload: rows of an uploaded field
  kDataChunk = 12,
  // worker → server, within an iteration: {run_id, iteration, executor, rows_done};
  // or while a run's rows load, when its kernels are being compiled: {run_id, compiling: true}
  kProgress = 13,
  // worker → server, between runs, when it moved: {free_memory: [bytes, per executor]}
  kResources = 14,
  // server → worker, when a run is cancelled or runs past its time limit:
  // {run_id, reason}.  The worker kills the processes of the run's executors
  // (a kernel may never return) and frees them; no reply
  kRunAbort = 15,
  // server → worker, once a run's rows are loaded, when the run is on this
  // worker alone: run iterations [first_iteration, max_iterations) here,
  // folding and calling the program's update hook as the server would:
  // {run_id, first_iteration, max_iterations, hook_timeout_ms}; payload: the
  // state section
  kLoop = 16,
  // worker → server, after each iteration of a loop, packed: run_id,
  // iteration, ok, unsupported, last, kernel_ms, ms, error; payload: the folded aggregate,
  // then the state the update hook left.  `unsupported`: this worker cannot
  // run the loop (the server then drives the iterations itself)
  kLoopStep = 17,
  // server → worker: load rows of a file onto executors and keep them for
  // later runs, no run needed (protocol/staging_messages.h): {stage_id,
  // path, format, dtype, width, data_roots, parts: [{executor, first_row, rows}]}
  kStageRows = 18,
  // worker → server, in answer to stage_rows: {stage_id, ok, error, parts:
  // [{executor, first_row, rows, bytes, key, was_kept}]}
  kRowsStaged = 19,
  // server → worker: let go of every kept row of a source (a path as runs
  // named it, or an upload's id), once the runs using them end: {source}; no reply
  kDropRows = 20,
  // server → worker, while runs of a program wait in the queue: build the
  // program for these specialised param values into the host's compile
  // cache, in the background, so that the runs find it built: {hash, params}; no reply
  kBuildAhead = 21,
};

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

}  // namespace lizard
