// The messages of every iteration — iterate, iteration_result and
// loop_step — whose headers are packed binary instead of JSON (wire.h), so
// that the server and its workers exchange an iteration without building,
// printing or parsing a JSON object.  Each struct writes and reads its own
// packed header with ByteWriter/ByteReader (common/byte_codec.h); every
// packed header begins with the run id, so a daemon can route a message
// without knowing its type (wire_run_id_of, protocol/messages.h).
//
//   link->send(encode(IterateMsg{wire_id, it}.to_message()) + state_bytes);
//   Result<IterationResultMsg> r = IterationResultMsg::parse(view.packed);
//
// On the path of every iteration, encode_into() and read() reuse the
// caller's frame buffer and struct, so that once their capacity has grown
// an iteration allocates nothing:
//
//   std::string_view payload[] = {aggregate, state};
//   step.encode_into(&frame, payload, 2);       // frame: a buffer kept for the run
//   Status st = step.read(view.packed);        // step: a struct kept for the run
//
// A packed header that is short, or longer than its fields, is an error
// value, never an exception.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/byte_codec.h"
#include "common/status.h"
#include "protocol/wire.h"

namespace lizard {

// server → worker: run one iteration.  Payload: the state section.
struct IterateMsg {
  std::string run_id;
  int64_t iteration = 0;
  Message to_message(std::string payload = {}) const;
  void encode_into(std::string* frame, const std::string_view* payload, size_t parts) const;
  static Result<IterateMsg> parse(std::string_view packed);
  Status read(std::string_view packed);  // parse(), into this struct
  void write(ByteWriter* w) const;       // the packed header's fields
};

// worker → server (or → the worker above it in the run's fold tree): one
// iteration's result.  Payload: aggregate sections —
// one (the worker's executors' partials folded) when the run's reducers are
// built in; with a custom reducer one per executor of the run on the worker,
// or per slice of one when the run reports progress (at most
// kMaxProgressSlices each).  The server refuses any other count.
struct IterationResultMsg {
  static constexpr int64_t kMaxProgressSlices = 32;

  std::string run_id;
  int64_t iteration = 0;
  bool ok = true;
  std::string error;
  double kernel_ms = 0;
  bool quick_build = false;  // an executor ran it on a quick build (exec/executor.h)
  // How many workers' aggregates it folds: 1, or, from a worker that folds
  // for others (a run's fold tree, plan/fold_tree.h), its whole subtree.
  int64_t workers = 1;
  // Not ok because a worker below this one in the fold tree sent nothing in
  // time: the tree, not the run, failed; the server folds the run itself.
  bool fold_failed = false;
  Message to_message(std::string payload = {}) const;
  void encode_into(std::string* frame, const std::string_view* payload, size_t parts) const;
  static Result<IterationResultMsg> parse(std::string_view packed);
  Status read(std::string_view packed);  // parse(), into this struct
  void write(ByteWriter* w) const;       // the packed header's fields
};

// worker → server: one iteration of a worker's loop.  Payload: the folded
// aggregate section, then the state section after the update hook.
struct LoopStepMsg {
  std::string run_id;
  int64_t iteration = 0;
  bool ok = true;
  bool unsupported = false;  // this worker cannot run the loop; nothing ran
  std::string error;
  double kernel_ms = 0;      // the slowest executor's kernels
  double ms = 0;             // the whole iteration on the worker, update hook included
  double fold_ms = 0;        // folding the executors' aggregates and the update hook
  bool last = false;         // the last iteration of the loop
  bool quick_build = false;  // an executor ran it on a quick build (exec/executor.h)
  Message to_message(std::string payload = {}) const;
  void encode_into(std::string* frame, const std::string_view* payload, size_t parts) const;
  static Result<LoopStepMsg> parse(std::string_view packed);
  Status read(std::string_view packed);  // parse(), into this struct
  void write(ByteWriter* w) const;       // the packed header's fields
};

// Each packed header's fields in the order write() puts them, for the
// reference page (protocol/wire_reference.h); a test reads encoded headers
// back through them.  Strings are an 8-byte length and the bytes, integers
// 8 bytes and doubles IEEE 754, little-endian; flags one byte, 0 or 1.
enum class PackedType { kString, kInt64, kDouble, kFlag };
struct PackedField {
  const char* name;
  PackedType type;
  const char* doc;
};
inline constexpr PackedField kIterateLayout[] = {
    {"run_id", PackedType::kString, "the attempt"},
    {"iteration", PackedType::kInt64, "the iteration to run"},
};
inline constexpr PackedField kIterationResultLayout[] = {
    {"run_id", PackedType::kString, "the attempt"},
    {"iteration", PackedType::kInt64, "the iteration"},
    {"ok", PackedType::kFlag, "whether it ran"},
    {"kernel_ms", PackedType::kDouble, "the slowest executor's kernels"},
    {"error", PackedType::kString, "why not"},
    {"quick_build", PackedType::kFlag, "some executor ran it on a quick build of its kernels"},
    {"workers", PackedType::kInt64,
     "how many workers' aggregates it folds: its own, and those of the workers below it in the "
     "run's fold tree"},
    {"fold_failed", PackedType::kFlag,
     "a worker below this one in the fold tree sent nothing in time: the server then folds the "
     "run itself"},
};
inline constexpr PackedField kLoopStepLayout[] = {
    {"run_id", PackedType::kString, "the attempt"},
    {"iteration", PackedType::kInt64, "the iteration"},
    {"ok", PackedType::kFlag, "whether it ran"},
    {"unsupported", PackedType::kFlag,
     "this worker cannot run the loop: nothing ran, the server drives the iterations"},
    {"last", PackedType::kFlag, "the last iteration of the loop"},
    {"kernel_ms", PackedType::kDouble, "the slowest executor's kernels"},
    {"ms", PackedType::kDouble, "the whole iteration on the worker, update hook included"},
    {"fold_ms", PackedType::kDouble, "folding the executors' aggregates and the update hook"},
    {"error", PackedType::kString, "why not"},
    {"quick_build", PackedType::kFlag, "some executor ran it on a quick build of its kernels"},
};

// The run id a packed header begins with; empty when it is malformed.
std::string_view packed_run_id(std::string_view packed);

}  // namespace lizard
