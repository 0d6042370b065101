// DataRoots: the directories a daemon may read dataset files from
// (`--data-root DIR`, repeatable, on `lizard server` and `lizard client`).
// A dataset path in a run request is allowed when, with every symlink
// resolved, it lies inside one of the roots; with no roots every path is
// allowed (any file the daemon's user can read).  A refusal is a
// kPermissionDenied Status whose message says nothing about the file.
//
// open() checks and opens in one step: the resolved path is opened below its
// root without following any symlink (dataset/beneath_open.h), so a link
// swapped in after the check is refused rather than followed.  The server
// sends its roots with each run, and a worker opens a run's files with them
// (and its own roots, when it has any).
//
//   Result<DataRoots> roots = DataRoots::make({"/var/lib/lizard/data"}, "server");
//   Status st = roots->check(path);            // before accepting a request
//   Result<InputFile> f = roots->open(path);   // where the file is read
//
// Immutable after make(); check() and open() may run on any thread.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "dataset/beneath_open.h"
#include "dataset/input_file.h"

namespace lizard {

class DataRoots {
 public:
  DataRoots() = default;  // unconfined
  // Resolves each directory (it must exist).  `who` names the daemon in
  // refusals ("server", "worker").
  static Result<DataRoots> make(const std::vector<std::string>& dirs, const std::string& who);
  // The server's roots as its messages carry them, on a worker: each must
  // be a directory there too.
  static Result<DataRoots> of_server(const std::vector<std::string>& dirs);

  bool confined() const { return !roots_.empty(); }
  const std::vector<std::string>& roots() const { return roots_; }
  // Ok when unconfined or when the resolved `path` lies under a root.
  Status check(const std::string& path) const;

  // Where a checked path lies: its root and the rest of its resolved path
  // (both empty when unconfined, `path` then as given).
  struct Located {
    std::string path, root, relative;
    std::string who;  // whose root it is, for refusals
  };
  // As check(), and also within `also`'s roots when it is confined.
  Result<Located> locate(const std::string& path, const DataRoots* also = nullptr) const;
  // Opens what locate() found, without following a symlink below its root
  // (a regular file, opened without blocking).
  Result<InputFile> open(const Located& at, BeneathMethod method = BeneathMethod::kBest) const;
  // locate() and open() at once.
  Result<InputFile> open(const std::string& path, const DataRoots* also = nullptr) const;

 private:
  // The root `real` (canonical) lies under, or "" when none.
  std::string root_of(const std::string& real) const;
  static Status refusal(const std::string& who);

  std::vector<std::string> roots_;  // canonical, absolute
  std::string who_;
};

}  // namespace lizard
