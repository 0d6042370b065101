// DataRoots: the directories a daemon may read dataset files from
// (`--data-root DIR`, repeatable, on `lizard server` and `lizard client`).
// A dataset path in a run request is allowed when, with every symlink
// resolved, it lies inside one of the roots; with no roots every path is
// allowed (any file the daemon's user can read).  A refusal is a
// kPermissionDenied Status whose message says nothing about the file.
//
//   Result<DataRoots> roots = DataRoots::make({"/var/lib/lizard/data"}, "server");
//   Status st = roots->check(path);   // before opening `path`
//
// Immutable after make(); check() may run on any thread.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace lizard {

class DataRoots {
 public:
  DataRoots() = default;  // unconfined
  // Resolves each directory (it must exist).  `who` names the daemon in
  // refusals ("server", "worker").
  static Result<DataRoots> make(const std::vector<std::string>& dirs, const std::string& who);

  bool confined() const { return !roots_.empty(); }
  const std::vector<std::string>& roots() const { return roots_; }
  // Ok when unconfined or when the resolved `path` lies under a root.
  Status check(const std::string& path) const;

 private:
  std::vector<std::string> roots_;  // canonical, absolute
  std::string who_;
};

}  // namespace lizard
