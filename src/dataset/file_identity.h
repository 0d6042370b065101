// FileIdentity: one version of a file, as stat(2) tells it: the file
// (device, inode) and its size, modification time and status-change time
// in nanoseconds.  A rewrite in place moves the size or mtime, a rename of
// another file into place the inode, and any write, truncate, rename or
// utimensat(2) the ctime, which no user can put back.  What it cannot see:
// writes through a shared mapping that move neither time (tmpfs does this);
// a run that asks to verify content pins a digest too (file_content.h).
//
// A run pins the identity of each file it reads by path when the server
// first reads it (PinnedFile); every later read checks the file against it:
//
//   PinnedFile pin{"x", path, *FileIdentity::of(path)};
//   ...
//   Status s = check_pinned(pin, *FileIdentity::of(path));
//   // "x.npy changed since the run first read it: size 8128 -> 16128"
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "common/status.h"

namespace lizard {

struct FileIdentity {
  uint64_t device = 0, inode = 0, size = 0;
  int64_t mtime_ns = 0, ctime_ns = 0;
  // stat(2) of `path` (following links to the file itself).
  static Result<FileIdentity> of(const std::string& path);
  // The identity a stat(2) or fstat(2) found.
  static FileIdentity of(const struct ::stat& st);
  bool operator==(const FileIdentity& o) const {
    return device == o.device && inode == o.inode && size == o.size && mtime_ns == o.mtime_ns &&
           ctime_ns == o.ctime_ns;
  }
  bool operator!=(const FileIdentity& o) const { return !(*this == o); }
  // "file:<dev>:<ino>:<size>:<mtime_ns>:<ctime_ns>:", how every key of its rows begins.
  std::string key_prefix() const;
};

// What differs between two versions of one path, as a person reads it
// ("size 8128 -> 16128, inode 12 -> 14"), or "" when they are the same
// version.  The device is left out: the same shared file has another
// device number on each machine that mounts it.
std::string version_changes(const FileIdentity& was, const FileIdentity& now);

// The version of a dataset file a run read first: what every later read of
// it by that run must find.
struct PinnedFile {
  std::string field;  // the dataset field whose rows it holds
  std::string path;   // as the run request named it
  FileIdentity identity;
  // The SHA-256 of its bytes when the run asked to verify content
  // (dataset/file_content.h), else "".
  std::string content_sha256;
};

// Ok when `now` is the pinned version; otherwise a kConflict naming the
// file and what changed.
Status check_pinned(const PinnedFile& pin, const FileIdentity& now);

}  // namespace lizard
