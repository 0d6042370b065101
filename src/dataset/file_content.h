// File content digests: for dataset files that may change in place where a
// file's identity (file_identity.h) cannot see it, such as writes through a
// shared mapping on tmpfs.  A run asks for them with `"verify": "content"`
// on a `path` source: the server reads the whole file and pins its SHA-256
// beside its identity (PinnedFile::content_sha256); rows are kept under a
// key that names the digest, and the server reads the file again after the
// workers loaded it, and before a run resumes or is re-planned, to check
// that the content is still the one pinned.
//
//   Result<std::string> digest = content_sha256(file);       // an open InputFile
//   Status s = check_pinned_content(pin);   // kConflict when the bytes moved
#pragma once

#include <string>

#include "common/status.h"
#include "dataset/file_identity.h"
#include "dataset/input_file.h"

namespace lizard {

// `"verify"` of a path source: how a run tells one version of a file from
// another.
enum class FileVerify {
  kIdentity,  // device, inode, size, mtime and ctime (the default)
  kContent,   // those, and the SHA-256 of every byte
};

// "identity" or "content"; anything else is an error naming both.
Result<FileVerify> parse_file_verify(const std::string& text);

// The SHA-256 of the file's bytes, in hex, read from its start to its size
// when it was opened; a file that ends sooner is an error.
Result<std::string> content_sha256(const InputFile& file);

// Ok when `pin` asks for no content check, or the file at its path still
// holds the bytes it pinned; otherwise a kConflict naming the file and
// saying that its content changed.
Status check_pinned_content(const PinnedFile& pin);

}  // namespace lizard
