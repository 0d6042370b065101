// FileRowsKey: the identity of rows read from a dataset file, under which an
// executor keeps them for later runs (exec/kept_rows.h).  The file is known
// by its device, inode, size and modification time in nanoseconds, so that
// a file rewritten in place (new size or mtime) or replaced by a rename (new
// inode) gets a new key and is read afresh; the rows by their range, element
// type, row width and file format, so that any program reading the same
// rows the same way shares them.
//
//   auto id = FileIdentity::of(path);
//   FileRowsKey k{*id, path, FileFormat::kNpy, DType::kFloat32, 32, first_row, rows};
//   if (executor_keeps(k.key())) ...;  else read_rows_unchanged(k, buf);
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "common/dtype.h"
#include "common/status.h"
#include "dataset/file_format.h"

namespace lizard {

struct FileIdentity {
  uint64_t device = 0, inode = 0, size = 0;
  int64_t mtime_ns = 0;
  // stat(2) of `path` (following links to the file itself).
  static Result<FileIdentity> of(const std::string& path);
  // The identity a stat(2) or fstat(2) found.
  static FileIdentity of(const struct ::stat& st);
  bool operator==(const FileIdentity& o) const {
    return device == o.device && inode == o.inode && size == o.size && mtime_ns == o.mtime_ns;
  }
  bool operator!=(const FileIdentity& o) const { return !(*this == o); }
  // "file:<dev>:<ino>:<size>:<mtime_ns>:", how every key of its rows begins.
  std::string key_prefix() const;
};

struct FileRowsKey {
  FileIdentity file;
  std::string path;  // as the run named it: for people, not part of the identity
  FileFormat format = FileFormat::kRaw;
  DType dtype = DType::kFloat32;
  int64_t width = 1;
  int64_t first_row = 0, rows = 0;

  uint64_t bytes() const;
  // "file:<dev>:<ino>:<size>:<mtime_ns>:<format>:<dtype>x<width>:<first>+<rows>"
  std::string key() const;
  // "<path> rows <first>..<end> (<dtype> x <width>)"
  std::string description() const;
};

// Reads the key's rows into `out` (bytes() long), failing when the file is
// no longer the one the key names, before or after the read: rows that
// reach an executor under a key are always that file's rows.
Status read_rows_unchanged(const FileRowsKey& key, uint8_t* out);

}  // namespace lizard
