// The schemas of the messages a worker sends the server (protocol/message_schemas.h
// says what a schema is for and lists them all).
#pragma once

#include <string>
#include <tuple>

#include "protocol/message_object_schemas.h"
#include "protocol/run_spec_schema.h"

namespace lizard {

// ---- worker → server ----------------------------------------------------------

template <>
struct WireSchema<HelloMsg> {
  using Type = HelloMsg;
  static constexpr const char* kName = "hello";
  static constexpr MessageType kType = MessageType::kHello;
  static constexpr const char* kDoc =
      "Once per connection: the worker's hardware and the wire version it speaks. A worker "
      "of another version is answered with a `welcome` that refuses it.";
  static auto fields() {
    return std::make_tuple(
        required("hostname", &HelloMsg::hostname, "the worker's host name"),
        optional("version", &HelloMsg::version, "the worker's lizard version"),
        optional("protocol", &HelloMsg::protocol,
                 "the wire version it speaks (absent: the frame's)"),
        optional("backend", &HelloMsg::backend, "`cuda`, `cpu` or `none`"),
        optional("backend_note", &HelloMsg::backend_note, "why the backend is not CUDA, if not"),
        optional("cpu", &HelloMsg::cpu, "the worker's CPU"),
        required<wire_schema::ListCodec<ExecutorInfoCodec>>(
            "executors", &HelloMsg::executors, "its executors, as `GET /clients` shows them"),
        omitted_when_empty("slurm_job_id", &HelloMsg::slurm_job_id,
                           "the Slurm job the worker runs in"),
        omitted_when_empty("toolchain", &HelloMsg::toolchain,
                           "what its builds are made with (a digest of the compiler, its version "
                           "and the machine, or of NVRTC's version): builds are shared only "
                           "between workers that name the same"),
        optional("fold_port", &HelloMsg::fold_port,
                 "the port on which it takes the links of the workers below it in a run's fold "
                 "tree, at the address the server sees it connect from (absent or 0: none)"));
  }
};

template <>
struct WireSchema<ProgramStatusMsg> {
  using Type = ProgramStatusMsg;
  static constexpr const char* kName = "program_status";
  static constexpr MessageType kType = MessageType::kProgramStatus;
  static constexpr const char* kDoc = "Once a program is built on every executor, or is not.";
  static auto fields() {
    return std::make_tuple(required("hash", &ProgramStatusMsg::hash, "the program"),
                           required("ok", &ProgramStatusMsg::ok, "whether it built"),
                           optional("error", &ProgramStatusMsg::error, "why not"));
  }
};

template <>
struct WireSchema<RunReadyMsg> {
  using Type = RunReadyMsg;
  static constexpr const char* kName = "run_ready";
  static constexpr MessageType kType = MessageType::kRunReady;
  static constexpr const char* kDoc = "The run's rows are loaded, or why not.";
  static auto fields() {
    return std::make_tuple(
        required("run_id", &RunReadyMsg::run_id, "the attempt (`r3.0`)"),
        required("ok", &RunReadyMsg::ok, "whether the rows are loaded"),
        optional("error", &RunReadyMsg::error, "why not"),
        optional("compile_ms", &RunReadyMsg::compile_ms,
                 "the slowest executor's compile for this run's values"),
        optional("compile_cache_hit", &RunReadyMsg::compile_cache_hit,
                 "every executor's binary came from a cache"),
        optional("missing", &RunReadyMsg::missing,
                 "`cached` fields (indices) whose rows this worker no longer holds"),
        optional("file_bytes_read", &RunReadyMsg::file_bytes_read,
                 "bytes of `path` fields read from their files"),
        optional("file_bytes_kept", &RunReadyMsg::file_bytes_kept,
                 "bytes of `path` fields taken from rows kept from earlier runs"),
        optional("quick_build", &RunReadyMsg::quick_build,
                 "an executor began on a quick build while the optimised one compiles"),
        optional("fold_unreachable", &RunReadyMsg::fold_unreachable,
                 "not ok because the worker above it in the fold tree could not be reached: "
                 "the server runs the run again with no tree"));
  }
  static std::string check(const RunReadyMsg& m) {
    for (int64_t i : m.missing)
      if (i < 0) return "a missing field is not an index";
    return "";
  }
};

template <>
struct WireSchema<RunOutputsMsg> {
  using Type = RunOutputsMsg;
  static constexpr const char* kName = "run_outputs";
  static constexpr MessageType kType = MessageType::kRunOutputs;
  static constexpr const char* kDoc = "The output fields' rows, when `run_end` asked for them.";
  static auto fields() {
    return std::make_tuple(
        required("run_id", &RunOutputsMsg::run_id, "the attempt"),
        required("ok", &RunOutputsMsg::ok, "whether the outputs were read"),
        optional("error", &RunOutputsMsg::error, "why not"),
        optional("fields", &RunOutputsMsg::fields, "the fields in the payload, in order"));
  }
};

template <>
struct WireSchema<ProgressMsg> {
  using Type = ProgressMsg;
  static constexpr const char* kName = "progress";
  static constexpr MessageType kType = MessageType::kProgress;
  static constexpr const char* kDoc =
      "Within an iteration: rows one executor has finished; or, while a run's rows load, that "
      "its kernels are compiling.";
  static auto fields() {
    return std::make_tuple(
        required("run_id", &ProgressMsg::run_id, "the attempt"),
        required("iteration", &ProgressMsg::iteration, "the running iteration"),
        required("executor", &ProgressMsg::executor, "the executor's index on the worker"),
        required("rows_done", &ProgressMsg::rows_done, "rows of its partition finished so far"),
        optional("compiling", &ProgressMsg::compiling,
                 "sent once while the run's rows load, when its kernels are being compiled "
                 "(the other fields then 0)"),
        optional("compiling_build", &ProgressMsg::compiling_build,
                 "with `compiling`: the build the run waits for, `quick` (it begins on it) or "
                 "`optimised`"));
  }
};

template <>
struct WireSchema<ResourcesMsg> {
  using Type = ResourcesMsg;
  static constexpr const char* kName = "resources";
  static constexpr MessageType kType = MessageType::kResources;
  static constexpr const char* kDoc =
      "Between runs, every 3 s when something moved (free memory by 16 MiB, utilisation by 5 "
      "points, the launch delay by a quarter, the kept rows): per executor. Measured only on "
      "executors that hold no run's rows.";
  static auto fields() {
    using Measured = wire_schema::ListCodec<MeasuredCodec>;
    using Kept = wire_schema::ListCodec<wire_schema::ListCodec<KeptRowsCodec>>;
    return std::make_tuple(
        required("free_memory", &ResourcesMsg::free_memory, "free bytes, per executor"),
        omitted_when_empty<Measured>("utilization", &ResourcesMsg::utilization,
                                     "percent of time a kernel ran, per GPU executor"),
        omitted_when_empty<Measured>("launch_delay_us", &ResourcesMsg::launch_delay_us,
                                     "an empty kernel's launch delay, per GPU executor"),
        omitted_when_empty<Kept>("kept", &ResourcesMsg::kept,
                                 "the rows each executor keeps for later runs"));
  }
};

template <>
struct WireSchema<RowsStagedMsg> {
  using Type = RowsStagedMsg;
  static constexpr const char* kName = "rows_staged";
  static constexpr MessageType kType = MessageType::kRowsStaged;
  static constexpr const char* kDoc =
      "In answer to `stage_rows`, after the worker's kept rows are reported anew.";
  static auto fields() {
    return std::make_tuple(
        required("stage_id", &RowsStagedMsg::stage_id, "the request answered"),
        required("ok", &RowsStagedMsg::ok, "whether the rows are kept"),
        optional("error", &RowsStagedMsg::error, "why not"),
        required<wire_schema::ListCodec<wire_schema::ObjectOf<StagedPartSchema>>>(
            "parts", &RowsStagedMsg::parts, "the parts as asked, with their bytes and keys"));
  }
};

template <>
struct WireSchema<FileProbedMsg> {
  using Type = FileProbedMsg;
  static constexpr const char* kName = "file_probed";
  static constexpr MessageType kType = MessageType::kFileProbed;
  static constexpr const char* kDoc = "In answer to `probe_file`.";
  static auto fields() {
    return std::make_tuple(
        required("probe_id", &FileProbedMsg::probe_id, "the request answered"),
        required("ok", &FileProbedMsg::ok, "whether the worker can read the file"),
        optional("error", &FileProbedMsg::error, "why not"),
        optional("identity", &FileProbedMsg::identity,
                 "the file it opened (a `file_identity`), when it can"));
  }
};

template <>
struct WireSchema<LogChunkMsg> {
  using Type = LogChunkMsg;
  static constexpr const char* kName = "log_chunk";
  static constexpr MessageType kType = MessageType::kLogChunk;
  static constexpr const char* kDoc =
      "What a run's kernels (and the host hooks of a loop the worker drives) printed, after each "
      "iteration that printed: the lines of every executor, each in the order printed. A run "
      "keeps at most 1 MiB of lines per worker; the worker's last chunk of the run says how "
      "much it cut past that.";
  static auto fields() {
    return std::make_tuple(
        required("run_id", &LogChunkMsg::run_id, "the attempt"),
        required<wire_schema::ListCodec<wire_schema::ObjectOf<WireSchema<LogLine>>>>(
            "lines", &LogChunkMsg::lines, "the lines"),
        optional("cut_lines", &LogChunkMsg::cut_lines,
                 "lines the worker dropped past its bound for the run"),
        optional("cut_bytes", &LogChunkMsg::cut_bytes, "their bytes"));
  }
};

// The fields that name a build, in build_offer and build_fetch.
inline auto build_ref_fields() {
  return std::make_tuple(
      required("hash", &BuildRef::hash, "the program"),
      optional("values", &BuildRef::values,
               "the specialised values baked into the build (`{}`: none)"),
      optional("tier", &BuildRef::tier, "`optimised` (the default), `quick` or `fast`"),
      required("arch", &BuildRef::arch,
               "the architecture built for: `sm_XY`, or `cpu`; one of the worker's executors'"));
}
inline std::string check_build_ref(const BuildRef& m) {
  if (m.hash.empty()) return "`hash` is empty";
  if (m.arch.empty()) return "`arch` is empty";
  if (!m.values.is_object()) return "`values` is not an object";
  return "";
}

template <>
struct WireSchema<BuildOfferMsg> {
  using Type = BuildOfferMsg;
  static constexpr const char* kName = "build_offer";
  static constexpr MessageType kType = MessageType::kBuildOffer;
  static constexpr const char* kDoc =
      "After the worker compiled a build it did not have: the build, for the server to keep "
      "and hand to other workers. The server files it under a key it computes itself from the "
      "program it holds, these values and tier, and the architecture and toolchain the "
      "worker's hello reported. No answer.";
  static auto fields() {
    return std::tuple_cat(
        build_ref_fields(),
        std::make_tuple(required("sha256", &BuildOfferMsg::sha256, "the payload's SHA-256 (hex)"),
                        required("bytes", &BuildOfferMsg::bytes, "the payload's length")));
  }
  static std::string check(const BuildOfferMsg& m) {
    if (std::string why = check_build_ref(m); !why.empty()) return why;
    return m.sha256.size() == 64 ? "" : "`sha256` is not 64 hex digits";
  }
};

template <>
struct WireSchema<BuildFetchMsg> {
  using Type = BuildFetchMsg;
  static constexpr const char* kName = "build_fetch";
  static constexpr MessageType kType = MessageType::kBuildFetch;
  static constexpr const char* kDoc =
      "Before the worker compiles a build it lacks: whether the server keeps it (for the "
      "worker's architecture and toolchain). Answered by `build_fetched`.";
  static auto fields() {
    return std::tuple_cat(std::make_tuple(required("request", &BuildFetchMsg::request,
                                                   "the worker's number for this request")),
                          build_ref_fields());
  }
  static std::string check(const BuildFetchMsg& m) { return check_build_ref(m); }
};

}  // namespace lizard
