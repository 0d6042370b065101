// The schemas of RunSpec, PartitionSpec and the RunValues in both
// (protocol/run_spec.h): their one codec.  run_start's header is RunSpec's
// fields with the worker's rows (message_schemas_server.h); an executor's
// begin_run carries a PartitionSpec as the JSON its schema makes
// (encode_partition_spec).  A new RunValues member gets its entry here.
#pragma once

#include <tuple>

#include "protocol/message_codecs.h"
#include "protocol/message_schema.h"
#include "protocol/run_spec.h"

namespace lizard {

template <>
struct WireSchema<RunValues> {
  using Type = RunValues;
  static constexpr const char* kName = "run_values";
  static auto fields() {
    return std::make_tuple(wire_schema::optional("seed", &RunValues::generate_seed,
                                                 "the generators' seed (`data.generate_seed`)"),
                           wire_schema::optional("run_seed", &RunValues::run_seed,
                                                 "the run's seed (`data.run_seed`)"));
  }
};

template <>
struct WireSchema<FileIdentity> {
  using Type = FileIdentity;
  static constexpr const char* kName = "file_identity";
  static auto fields() {
    using wire_schema::required;
    return std::make_tuple(
        required("device", &FileIdentity::device, "st_dev on the machine that pinned it"),
        required("inode", &FileIdentity::inode, "st_ino"),
        required("size", &FileIdentity::size, "bytes"),
        required("mtime_ns", &FileIdentity::mtime_ns, "modification time, ns since the epoch"),
        required("ctime_ns", &FileIdentity::ctime_ns, "status-change time, ns since the epoch"));
  }
};

template <>
struct WireSchema<PinnedFile> {
  using Type = PinnedFile;
  static constexpr const char* kName = "pinned_file";
  static auto fields() {
    using wire_schema::required;
    return std::make_tuple(
        required("field", &PinnedFile::field, "the dataset field"),
        required("path", &PinnedFile::path, "the file, as the run request named it"),
        required("identity", &PinnedFile::identity,
                 "the version the run read first (a `file_identity`)"),
        wire_schema::omitted_when_empty("content_sha256", &PinnedFile::content_sha256,
                                        "the SHA-256 of its bytes then, in hex, when the run "
                                        "verifies content (`\"verify\": \"content\"`)"));
  }
};

template <>
struct WireSchema<RunSpec> {
  using Type = RunSpec;
  static constexpr const char* kName = "run_spec";
  static auto fields() {
    using wire_schema::optional;
    return std::tuple_cat(
        std::make_tuple(wire_schema::required("hash", &RunSpec::hash, "the program"),
                        optional("params", &RunSpec::params, "the run's params")),
        WireSchema<RunValues>::fields(),
        std::make_tuple(
            optional<wire_schema::ListCodec<FieldSourceCodec>>(
                "fields", &RunSpec::fields, "where each dataset field's rows come from"),
            optional("data_roots", &RunSpec::data_roots,
                     "the server's `--data-root` directories: `path` fields lie in them"),
            wire_schema::omitted_when_empty(
                "files", &RunSpec::files,
                "the version of each `path` field's file the run read first: a worker reads "
                "only that version and fails the run on another"),
            optional("progress", &RunSpec::progress, "run iterations in slices and report each")));
  }
};

template <>
struct WireSchema<PartitionSpec> {
  using Type = PartitionSpec;
  static constexpr const char* kName = "partition_spec";
  static auto fields() {
    using wire_schema::optional;
    return std::tuple_cat(
        WireSchema<RunValues>::fields(),
        std::make_tuple(
            optional("first_row", &PartitionSpec::first_row, "the partition's first row"),
            optional("rows", &PartitionSpec::rows, "its rows"),
            optional("generators", &PartitionSpec::generators,
                     "the generator kernels to run before the first iteration")));
  }
  static std::string check(const PartitionSpec& p) {
    return p.first_row < 0 || p.rows < 0 ? "a partition's rows are negative" : "";
  }
};

}  // namespace lizard
