// The schemas of the messages the server sends a worker (protocol/message_schemas.h
// says what a schema is for and lists them all).
#pragma once

#include <string>
#include <tuple>

#include "protocol/message_object_schemas.h"
#include "protocol/run_spec_schema.h"

namespace lizard {

template <>
struct WireSchema<WelcomeMsg> {
  using Type = WelcomeMsg;
  static constexpr const char* kName = "welcome";
  static constexpr MessageType kType = MessageType::kWelcome;
  static constexpr const char* kDoc =
      "In answer to `hello`. When `refused` is set the server closes the connection; the worker "
      "logs why and dials again.";
  static auto fields() {
    return std::make_tuple(
        required("worker_id", &WelcomeMsg::worker_id, "the id the server knows the worker by"),
        optional("protocol", &WelcomeMsg::protocol,
                 "the wire version the server speaks (absent: the frame's)"),
        omitted_when_empty("refused", &WelcomeMsg::refused,
                           "why the server does not take this worker"),
        optional("builds", &WelcomeMsg::builds,
                 "the server keeps the builds workers share: offer it what you compile "
                 "(`build_offer`) and ask it before compiling (`build_fetch`)"));
  }
};

template <>
struct WireSchema<ProgramMsg> {
  using Type = ProgramMsg;
  static constexpr const char* kName = "program";
  static constexpr MessageType kType = MessageType::kProgram;
  static constexpr const char* kDoc = "Each registered program, for the worker to build.";
  static auto fields() {
    return std::make_tuple(
        required("hash", &ProgramMsg::hash, "the program's hash"),
        required("bundle", &ProgramMsg::bundle, "its `config` (config.yaml) and `sources`"));
  }
};

template <>
struct WireSchema<RunStartMsg> {
  using Type = RunStartMsg;
  static constexpr const char* kName = "run_start";
  static constexpr MessageType kType = MessageType::kRunStart;
  static constexpr const char* kDoc = "Load these rows and get ready to iterate.";
  static auto fields() {
    return std::tuple_cat(
        std::make_tuple(required("run_id", &RunStartMsg::run_id,
                                 "the attempt: `r3.0`, then `r3.1` after a re-plan")),
        WireSchema<RunSpec>::fields(),
        std::make_tuple(optional("first_row", &RunStartMsg::first_row, "this worker's first row"),
                        optional("rows", &RunStartMsg::rows, "this worker's rows"),
                        optional("parts", &RunStartMsg::parts, "its rows per executor"),
                        omitted_when_empty("fold", &RunStartMsg::fold,
                                           "its place in the run's fold tree (absent: it sends its "
                                           "results to the server and folds no other worker's)")));
  }
};

template <>
struct WireSchema<RunEndMsg> {
  using Type = RunEndMsg;
  static constexpr const char* kName = "run_end";
  static constexpr MessageType kType = MessageType::kRunEnd;
  static constexpr const char* kDoc = "The run is over; send the named output fields when asked.";
  static auto fields() {
    return std::make_tuple(
        required("run_id", &RunEndMsg::run_id, "the attempt"),
        optional("want_outputs", &RunEndMsg::want_outputs, "answer with `run_outputs`"),
        optional("outputs", &RunEndMsg::outputs, "the output fields to send"));
  }
};

template <>
struct WireSchema<DataChunkMsg> {
  using Type = DataChunkMsg;
  static constexpr const char* kName = "data_chunk";
  static constexpr MessageType kType = MessageType::kDataChunk;
  static constexpr const char* kDoc =
      "Before `run_start`: about 1 MiB of an uploaded field's rows (`chunks` fields).";
  static auto fields() {
    return std::make_tuple(
        required("run_id", &DataChunkMsg::run_id, "the attempt"),
        required("field", &DataChunkMsg::field, "the field's index in the manifest's `dataset`"),
        required("offset", &DataChunkMsg::offset, "bytes into this worker's rows of the field"),
        required("bytes", &DataChunkMsg::bytes, "bytes in this chunk"),
        required("total", &DataChunkMsg::total, "this worker's bytes of the field"));
  }
};

template <>
struct WireSchema<RunAbortMsg> {
  using Type = RunAbortMsg;
  static constexpr const char* kName = "run_abort";
  static constexpr MessageType kType = MessageType::kRunAbort;
  static constexpr const char* kDoc =
      "In place of `run_end`, when a run is cancelled or past its time limit. No answer: the "
      "worker kills the processes of the run's executors, starts them again and frees them. "
      "It goes ahead of the frames still queued for the worker, so it may arrive before the "
      "attempt's `run_start` or `data_chunk`s: the worker then starts nothing for the attempt.";
  static auto fields() {
    return std::make_tuple(required("run_id", &RunAbortMsg::run_id, "the attempt"),
                           optional("reason", &RunAbortMsg::reason, "why"));
  }
  static std::string check(const RunAbortMsg& m) {
    return m.run_id.empty() ? "run_id is missing" : "";
  }
};

template <>
struct WireSchema<LoopMsg> {
  using Type = LoopMsg;
  static constexpr const char* kName = "loop";
  static constexpr MessageType kType = MessageType::kLoop;
  static constexpr const char* kDoc =
      "After `run_ready`, for a run placed on this worker alone: run the iterations here, "
      "folding and calling the update hook as the server would.";
  static auto fields() {
    return std::make_tuple(
        required("run_id", &LoopMsg::run_id, "the attempt"),
        required("first_iteration", &LoopMsg::first_iteration, "the first iteration to run"),
        required("max_iterations", &LoopMsg::max_iterations, "run up to this iteration"),
        optional("hook_timeout_ms", &LoopMsg::hook_timeout_ms,
                 "the bound on one hook call; 0: the worker's own"));
  }
};

template <>
struct WireSchema<StageRowsMsg> {
  using Type = StageRowsMsg;
  static constexpr const char* kName = "stage_rows";
  static constexpr MessageType kType = MessageType::kStageRows;
  static constexpr const char* kDoc =
      "For `POST /datasets/stage`: load rows of a file onto executors and keep them for later "
      "runs (`client/row_staging.h`).";
  static auto fields() {
    return std::make_tuple(
        required("stage_id", &StageRowsMsg::stage_id, "the request, named in the answer"),
        required("path", &StageRowsMsg::path, "the file"),
        required("format", &StageRowsMsg::format, "`npy` or `raw`"),
        required("dtype", &StageRowsMsg::dtype, "the values' type"),
        required("width", &StageRowsMsg::width, "values per row, at least 1"),
        optional("data_roots", &StageRowsMsg::data_roots,
                 "the server's `--data-root` directories: the file lies in them"),
        required<wire_schema::ListCodec<wire_schema::ObjectOf<StagePartSchema>>>(
            "parts", &StageRowsMsg::parts, "which rows go to which executor"),
        optional("program", &StageRowsMsg::program,
                 "the program whose runs read the rows: its executor processes keep them"));
  }
  static std::string check(const StageRowsMsg& m) {
    return m.width < 1 ? "`width` must be at least 1" : "";
  }
};

template <>
struct WireSchema<DropRowsMsg> {
  using Type = DropRowsMsg;
  static constexpr const char* kName = "drop_rows";
  static constexpr MessageType kType = MessageType::kDropRows;
  static constexpr const char* kDoc =
      "For `POST /datasets/drop` and `DELETE /datasets/<id>`. No answer: each executor lets go "
      "of the source's kept rows once no run holds them.";
  static auto fields() {
    return std::make_tuple(
        required("source", &DropRowsMsg::source, "a path as runs named it, or an upload's id"));
  }
  static std::string check(const DropRowsMsg& m) {
    return m.source.empty() ? "`source` is empty" : "";
  }
};

template <>
struct WireSchema<ProbeFileMsg> {
  using Type = ProbeFileMsg;
  static constexpr const char* kName = "probe_file";
  static constexpr MessageType kType = MessageType::kProbeFile;
  static constexpr const char* kDoc =
      "For `POST /datasets/probe`: open a file as a run's loading would and say which it is "
      "(`client/file_probe.h`).";
  static auto fields() {
    return std::make_tuple(
        required("probe_id", &ProbeFileMsg::probe_id, "the request, named in the answer"),
        required("path", &ProbeFileMsg::path, "the file"),
        optional("data_roots", &ProbeFileMsg::data_roots,
                 "the server's `--data-root` directories: the file must lie in them"));
  }
  static std::string check(const ProbeFileMsg& m) {
    return m.path.empty() ? "`path` is empty" : "";
  }
};

template <>
struct WireSchema<BuildAheadMsg> {
  using Type = BuildAheadMsg;
  static constexpr const char* kName = "build_ahead";
  static constexpr MessageType kType = MessageType::kBuildAhead;
  static constexpr const char* kDoc =
      "While runs of a program wait in the queue: build it for these specialised values into "
      "the host's compile cache, in the background, so that the runs find it built; at most 8 "
      "sets of values of one program at a time. No answer.";
  static auto fields() {
    return std::make_tuple(
        required("hash", &BuildAheadMsg::hash, "the program"),
        optional("params", &BuildAheadMsg::params, "the specialised values, as a run names them"),
        optional("withdrawn", &BuildAheadMsg::withdrawn,
                 "no waiting run needs these values any more: drop their build unless it has "
                 "begun"));
  }
  static std::string check(const BuildAheadMsg& m) {
    return m.hash.empty() ? "`hash` is empty" : "";
  }
};

template <>
struct WireSchema<ProgramRemovedMsg> {
  using Type = ProgramRemovedMsg;
  static constexpr const char* kName = "program_removed";
  static constexpr MessageType kType = MessageType::kProgramRemoved;
  static constexpr const char* kDoc =
      "The program was deleted: forget it and end the hook processes kept idle for it. A run "
      "of it needs the program pushed again. No answer.";
  static auto fields() {
    return std::make_tuple(required("hash", &ProgramRemovedMsg::hash, "the program"));
  }
  static std::string check(const ProgramRemovedMsg& m) {
    return m.hash.empty() ? "`hash` is empty" : "";
  }
};

template <>
struct WireSchema<BuildFetchedMsg> {
  using Type = BuildFetchedMsg;
  static constexpr const char* kName = "build_fetched";
  static constexpr MessageType kType = MessageType::kBuildFetched;
  static constexpr const char* kDoc =
      "In answer to `build_fetch`: the build, or that the server keeps none. The worker "
      "checks the payload against `sha256` before it keeps or loads it, and compiles the "
      "build itself when they differ.";
  static auto fields() {
    return std::make_tuple(
        required("request", &BuildFetchedMsg::request, "the request answered"),
        required("found", &BuildFetchedMsg::found, "whether the server keeps the build"),
        optional("sha256", &BuildFetchedMsg::sha256,
                 "the SHA-256 (hex) of the build as it was offered"),
        optional("bytes", &BuildFetchedMsg::bytes, "the payload's length"),
        optional("error", &BuildFetchedMsg::error, "why the server has none to give"));
  }
};

}  // namespace lizard
