// RunArgs: the arguments of `lizard run` (--param, --dataset, --state,
// --executors, --max-iterations), checked and turned into the pieces of a run
// request (docs/program-format.md#the-run-request).  Datasets stay file names
// here; dataset_staging.h uploads them or passes their paths.
//
//   RunArgs spec;
//   Status s = add_param(&spec, "k=4");            // {"k": 4}
//   s = add_dataset(&spec, "points=data.npy");     // uploaded later
//   s = add_state(&spec, "centroids=[[0,0],[1,1]]");
//   nlohmann::json body = spec.request_without_dataset();
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace lizard {

// One --dataset argument: NAME=[FORMAT:]FILE, or FILE alone for a program
// with a single input field (`field` is then empty); or
// NAME=generate:KERNEL[,rows=N][,seed=S], a generator of the manifest.
struct DatasetArg {
  std::string field;
  std::string file;
  std::string format;     // npy, raw, csv, text or lizard; empty: from the extension
  std::string generator;  // set: the workers generate the field; no file
  std::string upload;     // set (NAME=upload:ID): an upload already on the server; no file
  nlohmann::json generate_options = nlohmann::json::object();  // rows, seed

  // The run request's source for a generated field.
  nlohmann::json generate_source() const;
};

struct RunArgs {
  nlohmann::json params = nlohmann::json::object();
  std::vector<DatasetArg> datasets;
  nlohmann::json state = nlohmann::json::object();
  nlohmann::json executors;  // null: every free executor
  std::optional<int64_t> max_iterations;
  std::optional<uint64_t> seed;  // --seed: the run's seed

  // The run request's params, state, executors, max_iterations and seed.
  nlohmann::json request_without_dataset() const;
};

// --param NAME=VALUE: VALUE is read as JSON (4, 0.5, true), else kept as text.
Status add_param(RunArgs* spec, const std::string& arg);

// --dataset NAME=FILE, NAME=FORMAT:FILE, FILE or NAME=generate:KERNEL[,rows=N][,seed=S].
Status add_dataset(RunArgs* spec, const std::string& arg);

// --state NAME=VALUES: a file (.npy, or numbers separated by commas, spaces or
// new lines), JSON ([[0, 0], [1, 1]], 0.5) or numbers separated by commas.
Status add_state(RunArgs* spec, const std::string& arg);

// --executors N, MIN:MAX or MIN: (as many as are free, at least MIN).
Result<nlohmann::json> parse_executors_arg(const std::string& arg);

// The values in a state file: nested as the .npy shape says, or a flat list
// of the numbers in a text file.
Result<nlohmann::json> read_values_file(const std::string& path);

}  // namespace lizard
