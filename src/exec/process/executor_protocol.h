// The executor protocol: how a worker (ProcessExecutor) and an executor host
// process (`lizard executor-host`, executor_host.h) speak over their
// FrameChannel.  One request frame per Executor call, answered by one reply
// frame; both sides encode and decode through the functions here, so the
// layout of each call is written once.
//
//   request: op (1 byte) | the call's fields
//   reply:   status code (1 byte) | message | lost (1 byte) | the call's results
//
// Fields are little-endian fixed-width integers and doubles, and byte
// strings as a u64 length and the bytes.  No JSON on the per-iteration path:
// an iterate request is its slice and the state bytes, and its reply the
// stats and the aggregate bytes.  Large byte strings are not copied into a
// frame: a begin_run request is followed by one frame per dataset field,
// which the host reads straight into its buffer (FrameChannel::receive_into),
// and end_run's output fields are parts of its reply (send_parts).
//
//   ByteWriter w;  w.u8(op);  w.bytes(state);  channel.send(w.out());
//   ByteReader r(frame);  uint8_t op = r.u8();  ...;  if (!r.ok()) error;
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "exec/executor.h"

namespace lizard {

enum class ExecutorOp : uint8_t {
  kInfo = 1,               // → ExecutorInfo as JSON text (once per process)
  kBuild = 2,              // program → -
  kBeginRun = 3,           // program?, params, partition; a frame per field → compile stats
  kIterate = 4,            // first, count (< 0: every row), state → stats, aggregate
  kEndRun = 5,             // want_outputs → fields
  kRefreshFreeMemory = 6,  // → free memory
  kRefreshLoad = 7,        // → utilisation, launch delay
  kProbe = 8,  // → the executors the backend options select (JSON), then the host exits
};

const char* executor_op_name(ExecutorOp op);

class ByteWriter {
 public:
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u64(uint64_t v);
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void f64(double v);
  void bytes(std::string_view b) {
    u64(b.size());
    out_.append(b);
  }
  // A byte string's length alone; its bytes follow as a part of their own.
  void length(uint64_t n) { u64(n); }
  std::string& out() { return out_; }

 private:
  std::string out_;
};

// Reads what ByteWriter wrote; a read past the end sets ok() to false and
// yields zeros, so a decoder checks ok() once at its end.
class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  uint8_t u8();
  uint64_t u64();
  int64_t i64() { return static_cast<int64_t>(u64()); }
  double f64();
  std::string_view bytes();
  std::string str() { return std::string(bytes()); }
  std::string_view rest();
  bool ok() const { return ok_; }
  Status status(const char* what) const;

 private:
  bool take(size_t n, const char** p);
  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// A program as it crosses the channel: its config.yaml and sources (the
// host regenerates the header), under the hash the worker knows it by.
void write_program(ByteWriter* w, const ProgramImage& p);
Result<ProgramImage> read_program(ByteReader* r);

void write_params(ByteWriter* w, const ParamValues& p);
ParamValues read_params(ByteReader* r);

// The head of a reply: the call's status and whether the device is lost.
void write_reply_head(ByteWriter* w, const Status& st, bool lost);
Status read_reply_head(ByteReader* r, bool* lost);

}  // namespace lizard
