// Reading one dataset field from a file named by a run request.
//
// A field of type `dtype` has rows of `width` values (the product of its shape
// after `rows`).  count_rows() checks the whole file against the field and
// says how many rows it holds; read_rows() then reads just one partition's
// rows, so that every worker touches only its own part of the file:
//
//   Result<int64_t> n = count_rows(path, FileFormat::kCsv, DType::kFloat32, 8);
//   std::vector<float> part(rows * 8);
//   Status s = read_rows(path, FileFormat::kCsv, DType::kFloat32, 8, first_row, rows, part.data());
//
// npy and raw files are read with pread straight into the destination; text
// formats (csv, text, lizard) are scanned line by line, parsing only the rows
// asked for.  Errors name the file and the line (text) or byte offset (binary).
// The functions keep no state and may run concurrently.
#pragma once

#include <cstdint>
#include <string>

#include "common/dtype.h"
#include "common/status.h"
#include "dataset/file_format.h"
#include "dataset/input_file.h"
#include "dataset/npy.h"

namespace lizard {

// The header of an .npy file opened already, read from its start (errors
// do not name the file: add file.path() as their context).
Result<NpyHeader> read_npy_header(const InputFile& file);

// Checks that the file holds rows of `width` values of `dtype` and returns how
// many: an npy header must match dtype exactly with shape (rows, ...) whose
// trailing dimensions multiply to `width`; a raw file's size must be a multiple
// of the row size; every text line must hold `width` numbers of the dtype.
Result<int64_t> count_rows(const std::string& path, FileFormat format, DType dtype, int64_t width);
// The same for a file opened already (DataRoots::open), read from its start.
Result<int64_t> count_rows(InputFile* file, FileFormat format, DType dtype, int64_t width);

// Reads rows [first_row, first_row + rows) into `dst`, which has room for
// rows * width values of `dtype` (row-major, native little-endian).  The file
// is expected to have passed count_rows(); rows past its end are an error.
Status read_rows(const std::string& path, FileFormat format, DType dtype, int64_t width,
                 int64_t first_row, int64_t rows, void* dst);
Status read_rows(InputFile* file, FileFormat format, DType dtype, int64_t width, int64_t first_row,
                 int64_t rows, void* dst);

// Where the rows of a binary (npy, raw) file lie, after the same checks as
// count_rows(): row r occupies [data_offset + r * row_bytes, + row_bytes).
struct BinaryRows {
  uint64_t data_offset = 0;
  uint64_t row_bytes = 0;
  int64_t rows = 0;
};
Result<BinaryRows> binary_rows(const std::string& path, FileFormat format, DType dtype,
                               int64_t width);
Result<BinaryRows> binary_rows(const InputFile& file, FileFormat format, DType dtype,
                               int64_t width);

}  // namespace lizard
