// Regular-file reads for the files a build and the compile cache read: a
// path is opened without blocking and refused unless fstat() says it is a
// regular file, so that a FIFO, a device or a directory planted where a file
// is expected fails at once instead of holding the reader for ever.
//
//   Result<int> fd = open_regular_file(path);       // O_CLOEXEC; the caller closes it
//   Result<std::string> bytes = read_regular_file(path);
//   if (!bytes.ok()) return bytes.status();         // "cannot open <path>: not a regular file"
#pragma once

#include <string>

#include "common/status.h"

namespace lizard {

// The path opened read-only (blocking reads, close-on-exec) when it is a
// regular file; kNotFound when it does not exist, kInvalidArgument when it is
// anything but a regular file.
Result<int> open_regular_file(const std::string& path);

// The whole content of the regular file at `path`.
Result<std::string> read_regular_file(const std::string& path);

// Whether `path` names a regular file (after symlinks), without opening it.
bool regular_file_exists(const std::string& path);

}  // namespace lizard
