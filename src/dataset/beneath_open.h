// open_beneath: opens a file for reading under a directory without following
// any symlink on the way, so that a path checked once (with its symlinks
// resolved) cannot be swapped for a link to somewhere else before it is
// opened.  Data roots (dataset/data_roots.h) open dataset files this way.
//
// Uses openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
// RESOLVE_NO_MAGICLINKS where the kernel has it (Linux 5.6 and later), and
// otherwise walks the path one component at a time with O_NOFOLLOW.  The file
// is opened without blocking (a FIFO would block open()) and must be a
// regular file.
//
//   Result<InputFile> f = open_beneath("/srv/data", "runs/x.npy");
//   // a symlink anywhere in "runs/x.npy", or a ".." in it: kPermissionDenied
#pragma once

#include <string>

#include "common/status.h"
#include "dataset/input_file.h"

namespace lizard {

enum class BeneathMethod { kBest, kComponentWalk };

// `relative` is a path below `dir` with no "." or ".." components (a
// canonical path made relative to `dir`).  A symlink in it is a
// kPermissionDenied error that says so; other failures name the path.
// `method` picks the fallback on purpose (for tests).  `name` names the file
// in messages (by default dir/relative).
Result<InputFile> open_beneath(const std::string& dir, const std::string& relative,
                               BeneathMethod method = BeneathMethod::kBest,
                               const std::string& name = "");

}  // namespace lizard
