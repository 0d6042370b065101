// UsersFile: the server's users file (--users), read again when it changes,
// so that `lizard users add` takes effect without a restart.  A change that
// does not parse is logged and the users read before stay.
//
// Thread-safe; current() looks at the file at most once a second.
//
//   auto file = UsersFile::open("/etc/lizard/users.yaml");   // an error if unreadable now
//   std::shared_ptr<const UserDirectory> users = (*file)->current();
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "users/user_directory.h"

namespace lizard {

class UsersFile {
 public:
  static Result<std::unique_ptr<UsersFile>> open(const std::string& path);
  std::shared_ptr<const UserDirectory> current();
  const std::string& path() const { return path_; }

 private:
  explicit UsersFile(std::string path) : path_(std::move(path)) {}
  // The file's modification time and size, to see that it changed.
  std::string stamp() const;

  const std::string path_;
  std::mutex mu_;
  std::shared_ptr<const UserDirectory> users_;
  std::string stamp_;
  std::chrono::steady_clock::time_point looked_;
};

}  // namespace lizard
