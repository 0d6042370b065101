// Keyed file rows: the two steps a worker takes before an executor reads a
// row range of a dataset file, shared by runs (run_session_files.cpp) and
// staging (row_staging.cpp), so that both name the same rows by the same key.
//
//   Result<FileRowsKey> key = open_file_rows_key(server_roots, worker_roots, path, fmt,
//                                                dtype, width, first_row, rows);
//   Result<FileRows> where = locate_keyed_rows(*key, "run again");
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "dataset/data_roots.h"
#include "dataset/file_rows_key.h"
#include "exec/file_rows.h"

namespace lizard {

// Opens `path` within the server's data roots and the worker's (`also`;
// null: none), without following a symlink swapped in after the check, and
// keys rows [first_row, first_row + rows) by the identity of what was opened.
Result<FileRowsKey> open_file_rows_key(const DataRoots& roots, const DataRoots* also,
                                       const std::string& path, FileFormat format, DType dtype,
                                       int64_t width, int64_t first_row, int64_t rows);

// Where the keyed rows lie in their file, refused when the file is no longer
// the one keyed; `retry` ends that refusal ("run again").
Result<FileRows> locate_keyed_rows(const FileRowsKey& key, const std::string& retry);

}  // namespace lizard
