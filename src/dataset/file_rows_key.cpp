#include "dataset/file_rows_key.h"

#include "dataset/dataset_file.h"

namespace lizard {

uint64_t FileRowsKey::bytes() const {
  return static_cast<uint64_t>(rows) * static_cast<uint64_t>(width) * dtype_size(dtype);
}

std::string FileRowsKey::key() const {
  std::string k = file.key_prefix() + file_format_name(format) + ":" + dtype_name(dtype) + "x" +
                  std::to_string(width) + ":" + std::to_string(first_row) + "+" +
                  std::to_string(rows);
  if (!content_sha256.empty()) k += ":sha256:" + content_sha256;
  return k;
}

std::string FileRowsKey::description() const {
  return path + " rows " + std::to_string(first_row) + ".." + std::to_string(first_row + rows) +
         " (" + dtype_name(dtype) + " x " + std::to_string(width) + ")";
}

Status read_rows_unchanged(const FileRowsKey& key, uint8_t* out) {
  auto changed = [&] {
    return Status(Code::kConflict, key.path + " changed while its rows were read; run again");
  };
  LIZARD_ASSIGN_OR_RETURN(FileIdentity before, FileIdentity::of(key.path));
  if (before != key.file) return changed();
  LIZARD_RETURN_IF_ERROR(
      read_rows(key.path, key.format, key.dtype, key.width, key.first_row, key.rows, out));
  LIZARD_ASSIGN_OR_RETURN(FileIdentity after, FileIdentity::of(key.path));
  if (after != key.file) return changed();
  return Status::Ok();
}

}  // namespace lizard
