// The executor protocol: how a worker (ProcessExecutor) and an executor host
// process (`lizard executor-host`, executor_host.h) speak over their
// FrameChannel.  One request frame per Executor call, answered by one reply
// frame; both sides encode and decode through the functions here, so the
// layout of each call is written once.
//
//   request: op (1 byte) | the call's fields
//   reply:   status code (1 byte) | message | lost (1 byte) | the call's results
//
// Fields are written with ByteWriter (common/byte_codec.h).  No JSON on the per-iteration path:
// an iterate request is its iteration, its slice and the state bytes, and its reply the
// stats and the aggregate bytes.  Large byte strings are not copied into a
// frame: a begin_run request is followed by one frame per dataset field,
// which the host reads straight into its buffer (FrameChannel::receive_into),
// and end_run's output fields are parts of its reply (send_parts) or, when
// they come to kSealedOutputBytes or more, one memory file passed with it,
// which the worker maps where it is: a file the process lends again once
// the worker gives it back (common/lent_memory.h; an end_run request names
// the loans given back since the last), else a sealed one
// (common/sealed_memory.h).
// Rows a process reads from a file itself (FileRows) come with the request
// that names them as a descriptor the worker opened, one per file in the
// order they are named: a process that serves one owner (kServeOwner) may
// not open the file's path.
//
//   ByteWriter w;  w.u8(op);  w.bytes(state);  channel.send(w.out());
//   ByteReader r(frame);  uint8_t op = r.u8();  ...;  if (!r.ok()) error;
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "common/byte_codec.h"
#include "common/status.h"
#include "exec/executor.h"

namespace lizard {

enum class ExecutorOp : uint8_t {
  kInfo = 1,               // → ExecutorInfo as JSON text (once per process)
  kBuild = 2,              // program → -
  kBeginRun = 3,           // program?, params, partition, field heads; a frame per field
                           // sent → compile stats, rows missing, kept rows
  kIterate = 4,            // iteration, first, count (< 0: every row), state → stats, aggregate
  kEndRun = 5,             // want_outputs, loans given back → field sizes, OutputsIn, fields
  kRefreshFreeMemory = 6,  // → free memory
  kRefreshLoad = 7,        // → utilisation, launch delay
  kProbe = 8,            // → the executors the backend options select (JSON), then the host exits
  kKeepFileRows = 9,     // key, file rows → kept keys (Executor::keep_file_rows)
  kForgetKeptRows = 10,  // keys → kept keys (Executor::forget_kept_rows)
  kServeOwner = 11,      // owner → - : the process serves that owner only from now on
};

const char* executor_op_name(ExecutorOp op);

// end_run outputs of at least this many bytes together cross in a sealed
// memory file: below it, the file costs more than the copy it saves.
constexpr uint64_t kSealedOutputBytes = uint64_t{4} << 20;

// Where end_run's output fields are, after their sizes in its reply.
enum class OutputsIn : uint8_t {
  kParts = 0,       // the parts after the reply
  kSealedFile = 1,  // the sealed memory file passed with it
  kLentFile = 2,    // the lent memory file passed with it, then the loan's id (u64)
};

// The ids of the loans an end_run request gives back.
void write_loans(ByteWriter* w, const std::vector<uint64_t>& ids);
std::vector<uint64_t> read_loans(ByteReader* r);

// A program as it crosses the channel: its config.yaml and sources (the
// host regenerates the header), under the hash the worker knows it by.
void write_program(ByteWriter* w, const ProgramImage& p);
Result<ProgramImage> read_program(ByteReader* r);

void write_params(ByteWriter* w, const ParamValues& p);
ParamValues read_params(ByteReader* r);

// How a begin_run field's rows travel: as a frame after the request, named
// by the key the executor process keeps them under (Executor::kept_rows), or
// as the place in a file the process reads them from itself (FileRows).
// Sent or read rows with a key may be kept under it for later runs.
enum class FieldRows : uint8_t { kSent = 0, kKept = 1, kFile = 2 };
struct FieldRowsHead {
  FieldRows how = FieldRows::kSent;
  std::string key;    // "" when the rows have none
  uint64_t size = 0;  // kKept: the rows' bytes
  FileRows file;      // kFile: where they lie
};

// begin_run's partition after its program and params: its PartitionSpec
// (protocol/run_spec.h, in its one codec) and how each field's rows travel.
// The reader fills all of `*d` but its fields; a spec that does not decode
// is an error.
void write_partition_head(ByteWriter* w, const PartitionData& d,
                          const std::vector<FieldRowsHead>& heads);
Result<std::vector<FieldRowsHead>> read_partition_head(ByteReader* r, PartitionData* d);

// Where a file's rows lie (FileRows), as a begin_run head or keep_file_rows names them.
void write_file_rows(ByteWriter* w, const FileRows& f);
FileRows read_file_rows_head(ByteReader* r);

// A list of kept rows' keys: a count, then each key.
void write_keys(ByteWriter* w, const std::vector<std::string>& keys);
std::vector<std::string> read_keys(ByteReader* r);

// begin_run's results.  `rows_missing`: the process no longer keeps rows the
// request named (the run did not begin; send them again); `kept`: the keys
// of the rows it keeps now.
struct BeginRunReply {
  CompileStats compile;
  bool rows_missing = false;
  std::vector<std::string> kept;
};
void write_begin_run_reply(ByteWriter* w, const CompileStats& compile, bool rows_missing,
                           const std::vector<std::string>& kept);
BeginRunReply read_begin_run_reply(ByteReader* r);

// The head of a reply: the call's status and whether the device is lost.
void write_reply_head(ByteWriter* w, const Status& st, bool lost);
Status read_reply_head(ByteReader* r, bool* lost);

}  // namespace lizard
