// The schemas of the objects inside message headers (protocol/message_schemas.h
// lists the messages): a run_start's parts, a run_outputs' fields, the parts
// of a staging request and its answer, a hello's CPU.
#pragma once

#include <string>
#include <tuple>

#include "protocol/message_codecs.h"
#include "protocol/message_schema.h"
#include "protocol/messages.h"
#include "protocol/staging_messages.h"

namespace lizard {

using wire_schema::omitted_when_empty;
using wire_schema::optional;
using wire_schema::required;

// ---- objects inside headers ---------------------------------------------------

template <>
struct WireSchema<CpuInfo> {
  using Type = CpuInfo;
  static constexpr const char* kName = "cpu";
  static auto fields() {
    return std::make_tuple(optional("model", &CpuInfo::model, "the CPU's model name"),
                           optional("threads", &CpuInfo::threads, "hardware threads"));
  }
};

template <>
struct WireSchema<PartSpec> {
  using Type = PartSpec;
  static constexpr const char* kName = "part";
  static auto fields() {
    return std::make_tuple(
        required("executor", &PartSpec::executor, "the executor's index on the worker"),
        required("first_row", &PartSpec::first_row, "its first row of the dataset"),
        required("rows", &PartSpec::rows, "how many rows it takes"));
  }
  static std::string check(const PartSpec& p) {
    return p.executor < 0 || p.first_row < 0 || p.rows < 0 ? "a part is negative" : "";
  }
};

template <>
struct WireSchema<FoldPlace> {
  using Type = FoldPlace;
  static constexpr const char* kName = "fold_place";
  static auto fields() {
    return std::make_tuple(
        omitted_when_empty("parent_id", &FoldPlace::parent_id,
                           "the worker it sends its iteration results to (absent: the server)"),
        omitted_when_empty("parent_address", &FoldPlace::parent_address,
                           "that worker's fold port, host:port"),
        omitted_when_empty("children", &FoldPlace::children,
                           "the workers whose iteration results it folds into its own, after its "
                           "own, in this order"),
        optional("wait_s", &FoldPlace::wait_s,
                 "how long it waits for a child's result before it reports the tree failed"),
        optional("workers", &FoldPlace::workers,
                 "how many workers' aggregates its results fold: itself and all below it"));
  }
  static std::string check(const FoldPlace& f) {
    if (f.workers < 1) return "a fold place covers no worker";
    if (f.parent_id.empty() != f.parent_address.empty())
      return "a fold place names a parent without its address, or an address without a parent";
    return f.wait_s < 0 ? "a fold place's wait is negative" : "";
  }
};

template <>
struct WireSchema<OutputPart> {
  using Type = OutputPart;
  static constexpr const char* kName = "output";
  static auto fields() {
    return std::make_tuple(required("name", &OutputPart::name, "the output field"),
                           required("bytes", &OutputPart::bytes, "its bytes in the payload"));
  }
};

// The longest log line a worker may send (its lines are cut well before).
inline constexpr size_t kMaxLogLineBytes = 8192;

template <>
struct WireSchema<LogLine> {
  using Type = LogLine;
  static constexpr const char* kName = "log_line";
  static auto fields() {
    return std::make_tuple(
        required("executor", &LogLine::executor,
                 "the executor's index on the worker; -1: a host hook the worker ran"),
        required("iteration", &LogLine::iteration,
                 "the iteration it was printed in; -1: outside one"),
        required("text", &LogLine::text, "the line, without its newline"));
  }
  static std::string check(const LogLine& l) {
    if (l.executor < -1 || l.iteration < -1)
      return "a log line's executor or iteration is negative";
    return l.text.size() > kMaxLogLineBytes ? "a log line is longer than 8 KiB" : "";
  }
};

// The parts of a stage_rows: which rows go to which executor.
struct StagePartSchema {
  using Type = StagedPart;
  static constexpr const char* kName = "stage_part";
  static auto fields() {
    return std::make_tuple(
        required("executor", &StagedPart::executor, "the executor's index on the worker"),
        required("first_row", &StagedPart::first_row, "the first row of the file"),
        required("rows", &StagedPart::rows, "how many rows"));
  }
  static std::string check(const StagedPart& p) {
    return p.executor < 0 || p.first_row < 0 || p.rows < 0 ? "a part has a negative executor or row"
                                                           : "";
  }
};

// The parts of a rows_staged: what each executor now keeps.
struct StagedPartSchema {
  using Type = StagedPart;
  static constexpr const char* kName = "staged_part";
  static auto fields() {
    return std::tuple_cat(
        StagePartSchema::fields(),
        std::make_tuple(
            required("bytes", &StagedPart::bytes, "the rows' bytes"),
            required("key", &StagedPart::key, "the key they are kept under"),
            required("was_kept", &StagedPart::was_kept, "the executor kept them already")));
  }
  static std::string check(const StagedPart& p) { return StagePartSchema::check(p); }
};

}  // namespace lizard
