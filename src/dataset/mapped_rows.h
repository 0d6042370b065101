// MappedRows: the rows of a binary (npy, raw) dataset file mapped read-only
// into memory, so that they can be sent on without being copied into a
// buffer first (the server streams uploaded datasets to workers this way).
// The mapping lives as long as the object; views into it stay valid until
// then.
//
//   Result<std::shared_ptr<const MappedRows>> m =
//       MappedRows::open(path, FileFormat::kNpy, DType::kFloat32, 16);
//   std::string_view bytes = (*m)->rows(first_row, 1000);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/dtype.h"
#include "common/status.h"
#include "dataset/dataset_file.h"
#include "dataset/file_format.h"

namespace lizard {

class MappedRows {
 public:
  // Checks the file as count_rows() does, then maps it.
  static Result<std::shared_ptr<const MappedRows>> open(const std::string& path, FileFormat format,
                                                        DType dtype, int64_t width);
  ~MappedRows();
  MappedRows(const MappedRows&) = delete;
  MappedRows& operator=(const MappedRows&) = delete;

  int64_t row_count() const { return layout_.rows; }
  uint64_t row_bytes() const { return layout_.row_bytes; }
  // The bytes of rows [first, first + n); an error when they are not all in the file.
  Result<std::string_view> rows(int64_t first, int64_t n) const;

 private:
  MappedRows(std::string path, BinaryRows layout, const char* base, size_t length);

  std::string path_;
  BinaryRows layout_;
  const char* base_ = nullptr;
  size_t length_ = 0;
};

}  // namespace lizard
