// StateDirIdentity: which file or directory a path named when the server
// opened it (its device and inode), so that a state directory (or the run
// database in it) removed or replaced under a running server is noticed:
// writes would otherwise go on into a deleted file, acknowledged and lost,
// or into a new, empty directory.
//
//   auto id = StateDirIdentity::take(state_dir, "the state directory");
//   if (!id.ok()) return id.status();
//   LIZARD_RETURN_IF_ERROR(id->check());  // before each write: an error once it is gone
//
// It holds the path open, so that its inode cannot be reused by a directory
// made again in its place.  A default-constructed identity checks nothing.
// Thread-safe (const).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "common/status.h"

namespace lizard {

class StateDirIdentity {
 public:
  StateDirIdentity() = default;

  // The identity of `path` now; `what` names it in errors.
  static Result<StateDirIdentity> take(const std::string& path, const std::string& what);

  // Ok while `path` still names what it named at take(); otherwise an
  // internal error (HTTP 500) that says it was removed or replaced.
  Status check() const;

 private:
  std::string path_, what_;
  std::shared_ptr<const int> fd_;  // closed with the last copy
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

}  // namespace lizard
