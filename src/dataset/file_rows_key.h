// FileRowsKey: the identity of rows read from a dataset file, under which an
// executor keeps them for later runs (exec/kept_rows.h).  The file is known
// by its identity (dataset/file_identity.h: device, inode, size, mtime and
// ctime in nanoseconds), so that a file rewritten in place (new size, mtime
// or ctime) or replaced by a rename (new inode) gets a new key and is read
// afresh; the rows by their range, element type, row width and file format,
// so that any program reading the same rows the same way shares them.
//
//   auto id = FileIdentity::of(path);
//   FileRowsKey k{*id, path, FileFormat::kNpy, DType::kFloat32, 32, first_row, rows};
//   if (executor_keeps(k.key())) ...;  else read_rows_unchanged(k, buf);
#pragma once

#include <cstdint>
#include <string>

#include "common/dtype.h"
#include "common/status.h"
#include "dataset/file_format.h"
#include "dataset/file_identity.h"

namespace lizard {

struct FileRowsKey {
  FileIdentity file;
  std::string path;  // as the run named it: for people, not part of the identity
  FileFormat format = FileFormat::kRaw;
  DType dtype = DType::kFloat32;
  int64_t width = 1;
  int64_t first_row = 0, rows = 0;
  // The SHA-256 of the file's bytes the run pinned (it verifies content), or "".
  std::string content_sha256;

  uint64_t bytes() const;
  // "file:<dev>:<ino>:<size>:<mtime_ns>:<ctime_ns>:<format>:<dtype>x<width>:<first>+<rows>",
  // then ":sha256:<hex>" with a content digest
  std::string key() const;
  // "<path> rows <first>..<end> (<dtype> x <width>)"
  std::string description() const;
};

// Reads the key's rows into `out` (bytes() long), failing when the file is
// no longer the one the key names, before or after the read: rows that
// reach an executor under a key are always that file's rows.
Status read_rows_unchanged(const FileRowsKey& key, uint8_t* out);

}  // namespace lizard
