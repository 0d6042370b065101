// Getting the files named by `lizard run --dataset` to the server: the
// "dataset" object of the run request, and what to clean up afterwards.
//
// A file goes by its absolute path when the server and every worker read
// that same file there (POST /datasets/probe compares their views of it with
// this machine's): its rows are then read where they run, at file speed,
// and kept between runs.  Otherwise it is uploaded: .npy and .raw files as
// they are (POST /datasets), text files (csv, text, lizard) read here into
// an .npy file of the field's type and row width first.  --shared-path
// sends every path without asking, --upload uploads every file.
// NAME=upload:ID names an upload already on the server (`lizard upload FILE`),
// which is neither sent nor removed.
//
//   Result<StagedDatasets> s =
//       stage_datasets(api, program.manifest, spec, FileDelivery::kChoose, &std::cerr);
//   body["dataset"] = s->dataset;
//   ... run ...
//   remove_uploads(api, s->uploads);
#pragma once

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

#include "cli/run_spec.h"
#include "cli/server_api.h"
#include "program/manifest.h"

namespace lizard {

// How `lizard run` sends dataset files.
enum class FileDelivery {
  kChoose,  // by path where every node reads the same file there, else uploaded
  kPath,    // by path (--shared-path)
  kUpload,  // uploaded (--upload)
};

struct StagedDatasets {
  nlohmann::json dataset = nlohmann::json::object();
  std::vector<std::string> uploads;  // dataset ids made for this run
};

// `log` gets one line per file, saying how it goes.  Uploads already made
// are removed again when a later one fails.
Result<StagedDatasets> stage_datasets(const ServerApi& api, const Manifest& manifest,
                                      const RunArgs& spec, FileDelivery delivery,
                                      std::ostream* log);

// The input field a --dataset argument is for (a lone FILE: the program's
// only input field).
Result<std::string> dataset_field_of(const Manifest& manifest, const DatasetArg& arg);

// DELETE /datasets/<id> for each; failures are ignored (the run is over).
void remove_uploads(const ServerApi& api, const std::vector<std::string>& ids);

}  // namespace lizard
