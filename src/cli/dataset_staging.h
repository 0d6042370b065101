// Getting the files named by `lizard run --dataset` to the server: the
// "dataset" object of the run request, and what to clean up afterwards.
//
// With --shared-path each file is passed by its absolute path, which every
// node must be able to read.  Otherwise .npy and .raw files are uploaded as
// they are (POST /datasets), and text files (csv, text, lizard) are read here
// into an .npy file of the field's type and row width, which is uploaded.
// NAME=upload:ID names an upload already on the server (`lizard upload FILE`),
// which is neither sent nor removed.
//
//   Result<StagedDatasets> s = stage_datasets(api, program.manifest, spec, false, &std::cerr);
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

struct StagedDatasets {
  nlohmann::json dataset = nlohmann::json::object();
  std::vector<std::string> uploads;  // dataset ids made for this run
};

// `log` gets one line per upload.  Uploads already made are removed again
// when a later one fails.
Result<StagedDatasets> stage_datasets(const ServerApi& api, const Manifest& manifest,
                                      const RunArgs& spec, bool shared_paths, std::ostream* log);

// The input field a --dataset argument is for (a lone FILE: the program's
// only input field).
Result<std::string> dataset_field_of(const Manifest& manifest, const DatasetArg& arg);

// DELETE /datasets/<id> for each; failures are ignored (the run is over).
void remove_uploads(const ServerApi& api, const std::vector<std::string>& ids);

}  // namespace lizard
