// UsersFile: the server's users file (--users), read again when it changes,
// so that `lizard users add` takes effect without a restart.  A change that
// does not parse is logged and the users read before stay.
//
// A thread of its own looks at the file once a second and reads it again
// when it changed; current() only hands out the users last read, so the
// server's io threads that call it never touch the disk.  Thread-safe.
//
//   auto file = UsersFile::open("/etc/lizard/users.yaml");   // an error if unreadable now
//   std::shared_ptr<const UserDirectory> users = (*file)->current();
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "users/user_directory.h"

namespace lizard {

class UsersFile {
 public:
  static Result<std::unique_ptr<UsersFile>> open(
      const std::string& path, std::chrono::milliseconds look_every = std::chrono::seconds(1));
  ~UsersFile();
  UsersFile(const UsersFile&) = delete;
  UsersFile& operator=(const UsersFile&) = delete;

  std::shared_ptr<const UserDirectory> current() const;
  const std::string& path() const { return path_; }

 private:
  UsersFile(std::string path, std::chrono::milliseconds look_every)
      : path_(std::move(path)), look_every_(look_every) {}
  // The file's modification time, size and inode, to see that it changed.
  std::string stamp() const;
  // The watcher's loop: a look every look_every_ until the destructor.
  void watch();
  // Reads the file again if its stamp changed (the watcher's thread).
  void look();

  const std::string path_;
  const std::chrono::milliseconds look_every_;
  mutable std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::shared_ptr<const UserDirectory> users_;
  std::string stamp_;  // the watcher's alone
  std::thread watcher_;
};

}  // namespace lizard
