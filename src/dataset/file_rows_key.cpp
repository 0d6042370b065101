#include "dataset/file_rows_key.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "dataset/dataset_file.h"

namespace lizard {

Result<FileIdentity> FileIdentity::of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return not_found(path + ": " + std::strerror(errno));
  return of(st);
}

FileIdentity FileIdentity::of(const struct ::stat& st) {
  FileIdentity id;
  id.device = static_cast<uint64_t>(st.st_dev);
  id.inode = static_cast<uint64_t>(st.st_ino);
  id.size = static_cast<uint64_t>(st.st_size);
  id.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return id;
}

std::string FileIdentity::key_prefix() const {
  return "file:" + std::to_string(device) + ":" + std::to_string(inode) + ":" +
         std::to_string(size) + ":" + std::to_string(mtime_ns) + ":";
}

uint64_t FileRowsKey::bytes() const {
  return static_cast<uint64_t>(rows) * static_cast<uint64_t>(width) * dtype_size(dtype);
}

std::string FileRowsKey::key() const {
  return file.key_prefix() + file_format_name(format) + ":" + dtype_name(dtype) + "x" +
         std::to_string(width) + ":" + std::to_string(first_row) + "+" + std::to_string(rows);
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
