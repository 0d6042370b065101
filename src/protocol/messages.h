// Typed wire messages: one struct per message type of wire.h, each with its
// encoding and its parser, both made from the message's schema
// (protocol/message_schemas.h).  Both daemons build and read messages through
// these structs, so a field is named once, there, and a malformed header from
// the other side is an error value, never an exception.
//
//   link->send(encode(RunEndMsg{wire_id, true, {"labels"}}.to_message()));
//   Result<RunOutputsMsg> r = RunOutputsMsg::parse(view.header);
//
// Payloads (rows, state, aggregates) stay beside the header: to_message()
// takes the payload and parse() reads the header alone.  The messages of
// every iteration have packed headers instead (iteration_messages.h, included
// here); wire_run_id_of() and reported_error() read either kind.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "dataset/dataset_source.h"
#include "protocol/executor_info.h"
#include "protocol/iteration_messages.h"
#include "protocol/run_spec.h"
#include "protocol/wire.h"

namespace lizard {

// The worker's CPU, in its hello.
struct CpuInfo {
  std::string model;
  int64_t threads = 0;
};

// worker → server: the worker's hardware and wire version, once per connection.
struct HelloMsg {
  std::string hostname, version, backend, backend_note;
  CpuInfo cpu;
  std::string slurm_job_id;  // empty outside a Slurm job
  std::vector<ExecutorInfo> executors;
  int64_t protocol = kWireVersion;  // the wire version the worker speaks
  // What its builds are made with (the compiler, its version, the machine
  // or NVRTC's version): builds are shared only between workers that agree.
  std::string toolchain;
  // The port on which it takes the links of the workers below it in a run's
  // fold tree (client/fold_links.h); 0: it takes none, and folds nothing.
  int64_t fold_port = 0;
  nlohmann::json to_json() const;  // as GET /clients shows it
  Message to_message() const;
  static Result<HelloMsg> parse(const nlohmann::json& h);
};

// server → worker: the id the server knows the worker by, or, when
// `refused` says why, that the server will not take this worker.
struct WelcomeMsg {
  std::string worker_id;
  int64_t protocol = kWireVersion;  // the wire version the server speaks
  std::string refused{};
  bool builds = false;  // the server keeps builds workers share (buildstore/)
  Message to_message() const;
  static Result<WelcomeMsg> parse(const nlohmann::json& h);
};

// server → worker: a program to build.
struct ProgramMsg {
  std::string hash;
  nlohmann::json bundle;
  Message to_message() const;
  static Result<ProgramMsg> parse(const nlohmann::json& h);
};

// worker → server: whether a program built on every executor of the worker.
struct ProgramStatusMsg {
  std::string hash;
  bool ok = false;
  std::string error;
  Message to_message() const;
  static Result<ProgramStatusMsg> parse(const nlohmann::json& h);
};

// One executor's rows in a run_start.
struct PartSpec {
  int64_t executor = 0;
  int64_t first_row = 0;
  int64_t rows = 0;
};

// server → worker: load these rows and get ready to iterate: the run's spec
// (protocol/run_spec.h; its fields' deliveries are of this worker's rows)
// and this worker's rows.  Payload: inline rows.
// Where one worker stands in a run's fold tree (plan/fold_tree.h): whose
// iteration results it folds into its own before it sends them on, and to
// whom — the worker above it, or the server when `parent_id` is empty.
struct FoldPlace {
  std::string parent_id;              // the worker it sends to; "": the server
  std::string parent_address;         // that worker's fold links, host:port
  std::vector<std::string> children;  // whose results it folds, after its own, in this order
  double wait_s = 0;    // how long it waits for a child's result before its tree has failed
  int64_t workers = 1;  // the workers whose aggregates it sends: itself and all below it
  bool empty() const { return parent_id.empty() && children.empty(); }
};

struct RunStartMsg : RunSpec {
  std::string run_id;
  int64_t first_row = 0, rows = 0;
  std::vector<PartSpec> parts;
  FoldPlace fold;  // empty: it sends its results to the server, and folds no other's
  Message to_message(std::string payload = {}) const;
  static Result<RunStartMsg> parse(const nlohmann::json& h);
};

// worker → server: the rows are loaded (or why not).
struct RunReadyMsg {
  std::string run_id;
  bool ok = true;
  std::string error;
  double compile_ms = 0;           // slowest executor's compile for this run's values
  bool compile_cache_hit = false;  // every executor's binary came from a cache
  std::vector<int64_t> missing;    // `cached` fields whose rows this worker no longer holds
  // Bytes of the rows of `path` fields read from their files for this run,
  // and taken instead from the rows its executors kept from earlier runs.
  uint64_t file_bytes_read = 0, file_bytes_kept = 0;
  bool quick_build = false;  // an executor began on a quick build (exec/executor.h)
  // Not ok because the worker above it in the fold tree could not be reached:
  // the server then runs the run with no tree.
  bool fold_unreachable = false;
  Message to_message() const;
  static Result<RunReadyMsg> parse(const nlohmann::json& h);
};

// server → worker: the run is over; send the named output fields when asked.
struct RunEndMsg {
  std::string run_id;
  bool want_outputs = false;
  std::vector<std::string> outputs;
  Message to_message() const;
  static Result<RunEndMsg> parse(const nlohmann::json& h);
};

// One output field in a run_outputs payload.
struct OutputPart {
  std::string name;
  uint64_t bytes = 0;
};

// worker → server: the output fields' rows.  Payload: the fields, in order.
struct RunOutputsMsg {
  std::string run_id;
  bool ok = true;
  std::string error;
  std::vector<OutputPart> fields;
  Message to_message(std::string payload = {}) const;
  static Result<RunOutputsMsg> parse(const nlohmann::json& h);
};

// server → worker, ahead of run_start: rows of an uploaded field.  Payload: rows.
struct DataChunkMsg {
  std::string run_id;
  uint64_t field = 0, offset = 0, bytes = 0, total = 0;
  Message to_message(std::string payload = {}) const;
  static Result<DataChunkMsg> parse(const nlohmann::json& h);
};

// worker → server: rows of the running iteration one executor has finished.
struct ProgressMsg {
  std::string run_id;
  int64_t iteration = 0, executor = 0, rows_done = 0;
  // Sent once while the run's rows load, when its kernels are not built yet
  // and are being compiled now (the other fields 0).
  bool compiling = false;
  // With `compiling`: the build the run waits for, "quick" (the run begins
  // on it and switches to the optimised one) or "optimised"; empty: not said.
  std::string compiling_build = {};
  Message to_message() const;
  static Result<ProgressMsg> parse(const nlohmann::json& h);
};

// One line a run's user code printed on a worker: which executor printed it
// (-1: a host hook of a loop this worker drives), during which iteration (-1:
// outside one, while the rows load or the run ends), and its text.
struct LogLine {
  int64_t executor = 0, iteration = 0;
  std::string text;
};

// worker → server: lines a run's user code printed, in the order printed on
// each executor; at the run's end, how many lines the worker's bound cut.
struct LogChunkMsg {
  std::string run_id;
  std::vector<LogLine> lines;
  uint64_t cut_lines = 0, cut_bytes = 0;
  Message to_message() const;
  static Result<LogChunkMsg> parse(const nlohmann::json& h);
};

// Rows an executor keeps for later runs (exec/kept_rows.h): their key, what
// they are for people ("/data/x.npy rows 0..4096 (float32 x 8)"), their
// bytes, and where they came from: `source` is the path as runs named it or
// the upload's id ("" when unknown), rows [first_row, first_row + rows).
struct KeptRowsEntry {
  std::string key, description;
  uint64_t bytes = 0;
  std::string source{};
  int64_t first_row = 0, rows = 0;
  bool operator==(const KeptRowsEntry& o) const {
    return key == o.key && description == o.description && bytes == o.bytes && source == o.source &&
           first_row == o.first_row && rows == o.rows;
  }
};

// worker → server: per executor, free memory, how busy it is (utilisation
// in percent, launch delay in µs; < 0, null on the wire: not measured) and
// the rows it keeps, when any of it moved.
struct ResourcesMsg {
  std::vector<uint64_t> free_memory;
  // Empty (a worker that does not report them), or one list per executor.
  std::vector<std::vector<KeptRowsEntry>> kept{};
  std::vector<double> utilization{}, launch_delay_us{};  // empty, or one per executor
  Message to_message() const;
  static Result<ResourcesMsg> parse(const nlohmann::json& h);
};

// server → worker: stop this run now (cancelled, or past its time limit);
// the worker kills its executors' processes and frees them.
struct RunAbortMsg {
  std::string run_id;
  std::string reason;
  Message to_message() const;
  static Result<RunAbortMsg> parse(const nlohmann::json& h);
};

// server → worker: build program `hash` for the specialised values in
// `params` (as a run request names them) into the host's compile cache, ahead
// of the queued runs that need them; no reply.
struct BuildAheadMsg {
  std::string hash;
  nlohmann::json params = nlohmann::json::object();
  // No queued run needs this variant any more (cancelled, or started): drop
  // its build if it has not begun.
  bool withdrawn = false;
  Message to_message() const;
  static Result<BuildAheadMsg> parse(const nlohmann::json& h);
};

// server → worker: program `hash` was deleted (DELETE /programs/<hash>):
// forget it, and end its idle hook processes; no reply.
struct ProgramRemovedMsg {
  std::string hash;
  Message to_message() const;
  static Result<ProgramRemovedMsg> parse(const nlohmann::json& h);
};

// server → worker: run the loop of a run placed on this worker alone (see
// MessageType::kLoop).  Payload: the state section.
struct LoopMsg {
  std::string run_id;
  int64_t first_iteration = 0, max_iterations = 0;
  int64_t hook_timeout_ms = 0;  // the server's bound on one hook call; 0: the worker's own
  Message to_message(std::string payload = {}) const;
  static Result<LoopMsg> parse(const nlohmann::json& h);
};

// Which build of a program a build_offer or build_fetch means: the program,
// the specialised values baked in (Specialisation::to_json), the tier
// ("optimised", "quick", "fast") and the architecture ("sm_90"; "cpu" for the
// CPU backend).  The compiler is the one the worker's hello named.
struct BuildRef {
  std::string hash;
  nlohmann::json values = nlohmann::json::object();
  std::string tier = "optimised";
  std::string arch;
};

// worker → server: a build this worker compiled, for others to fetch.
// Payload: the build's bytes, whose SHA-256 is `sha256`.
struct BuildOfferMsg : BuildRef {
  std::string sha256;
  uint64_t bytes = 0;
  Message to_message(std::string payload = {}) const;
  static Result<BuildOfferMsg> parse(const nlohmann::json& h);
};

// worker → server: send me this build if you have it (answered by
// build_fetched with the same `request`).
struct BuildFetchMsg : BuildRef {
  uint64_t request = 0;
  Message to_message() const;
  static Result<BuildFetchMsg> parse(const nlohmann::json& h);
};

// server → worker: the build asked for, or why not.  Payload: its bytes,
// whose SHA-256 the server recorded when it was offered is `sha256`.
struct BuildFetchedMsg {
  uint64_t request = 0;
  bool found = false;
  std::string sha256;
  uint64_t bytes = 0;
  std::string error;
  Message to_message(std::string payload = {}) const;
  static Result<BuildFetchedMsg> parse(const nlohmann::json& h);
};

// Whether a worker may go on with the server that sent this welcome: an
// error naming both wire versions when the server refused it or speaks
// another version.
Status accept_welcome(const WelcomeMsg& w);
// The same for a welcome frame decode() refused (one of another version).
Status accept_welcome_frame(std::string_view frame);

// The run a wire id ("r7.2": run r7, attempt 2) belongs to: a view into `wire_id`.
std::string_view run_of_wire_id(std::string_view wire_id);

// The wire id a message names in its header, packed or JSON; empty when it
// names none.
std::string wire_run_id_of(MessageType type, const nlohmann::json& header, std::string_view packed);
template <typename M>  // Message or MessageView
std::string wire_run_id_of(const M& m) {
  return wire_run_id_of(m.type, m.header, m.packed);
}

// What a worker's reply reports as its failure (`ok` false, with its error
// or "failed"); nothing when it reports success or is not a reply that can.
std::optional<std::string> reported_error(MessageType type, const nlohmann::json& header,
                                          std::string_view packed);
template <typename M>
std::optional<std::string> reported_error(const M& m) {
  return reported_error(m.type, m.header, m.packed);
}

}  // namespace lizard
