// RunSpec and PartitionSpec: what a run is, declared once and carried from
// the run request to the kernels.  The server builds a run's RunSpec from its
// request (server/run_request.h) and sends it to each worker as the body of
// run_start (RunStartMsg is a RunSpec plus that worker's rows); the worker
// hands each executor a PartitionSpec: the part of the run an executor needs
// (the values its kernels see) plus its own rows.  Both cross the wire
// through one codec each, made from their schemas (protocol/run_spec_schema.h):
// a value added to RunValues (program/run_values.h) reaches every hop, and
// the kernels, with no hop naming it.
//
//   RunStartMsg start;
//   static_cast<RunSpec&>(start) = spec;                 // server → worker
//   std::string text = encode_partition_spec(part);      // worker → executor
//   Result<PartitionSpec> back = decode_partition_spec(text);
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "dataset/dataset_source.h"
#include "dataset/file_identity.h"
#include "program/run_values.h"

namespace lizard {

// What a run is, as every worker of it is told.  The RunValues are its own
// members (its base), so that the run_start header keeps them at the top
// level ("seed").
struct RunSpec : RunValues {
  std::string hash;                                  // the program's checksum
  nlohmann::json params = nlohmann::json::object();  // as bind_params() reads them
  std::vector<FieldSource> fields;      // manifest.dataset order: each field's delivery
  std::vector<std::string> data_roots;  // `path` fields lie in these (none: any)
  // The version of each `path` field's file the run read first
  // (dataset/file_identity.h): a worker reads only that version.
  std::vector<PinnedFile> files;
  bool progress = false;  // run iterations in slices and report each
};

// What one executor is told of a run: the values its kernels see, its rows
// and the generator kernels that fill fields before the first iteration.
struct PartitionSpec : RunValues {
  int64_t first_row = 0;  // in the dataset
  int64_t rows = 0;
  std::vector<std::string> generators;  // names from manifest.generate, in the order they run
};

// The executor hop's codec of a PartitionSpec (JSON text made from its schema).
std::string encode_partition_spec(const PartitionSpec& p);
Result<PartitionSpec> decode_partition_spec(std::string_view text);

}  // namespace lizard
