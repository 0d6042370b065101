// StageRequest: a POST /datasets/stage body, checked: the file to stage (an
// .npy or raw file within the server's --data-root directories), the
// program whose runs will read them, its element type and row width (an .npy file's from its
// header; a raw file's from the body), its row count, and how many executors to stage it onto. The
// rows are then kept under the keys a run over the same file would name them by
// (dataset/file_rows_key.h).  Blocking (opens and reads the file): call off the io thread.
//
//   Result<StageRequest> r = parse_stage_request(body, roots);
//   // {"path": "/data/x.npy", "program": HASH}
//   // {"path": "/data/x.raw", "program": HASH, "dtype": "float32", "width": 8}
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "common/dtype.h"
#include "common/status.h"
#include "dataset/data_roots.h"
#include "dataset/file_format.h"

namespace lizard {

struct StageRequest {
  std::string path;  // as the body named it: runs must name it the same way
  // The program whose runs read them (its hash): its executor processes keep them.
  std::string program;
  FileFormat format = FileFormat::kNpy;
  DType dtype = DType::kFloat32;
  int64_t width = 1;
  int64_t rows = 0;                // the file's
  int64_t executors = 0;           // how many to stage onto; 0: every free executor
  nlohmann::json to_json() const;  // path, program, format, dtype, width, rows
};

// kInvalidArgument for a malformed body, a missing file or one that is not
// an .npy or raw file of rows, or an upload (not stageable);
// kPermissionDenied for a path outside the data roots.
Result<StageRequest> parse_stage_request(const std::string& body, const DataRoots& roots);

}  // namespace lizard
