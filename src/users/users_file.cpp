#include "users/users_file.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

namespace lizard {

Result<std::unique_ptr<UsersFile>> UsersFile::open(const std::string& path,
                                                   std::chrono::milliseconds look_every) {
  LIZARD_ASSIGN_OR_RETURN(UserDirectory users, UserDirectory::load(path));
  std::unique_ptr<UsersFile> file(new UsersFile(path, look_every));
  file->users_ = std::make_shared<const UserDirectory>(std::move(users));
  file->stamp_ = file->stamp();
  file->watcher_ = std::thread([f = file.get()] { f->watch(); });
  return file;
}

UsersFile::~UsersFile() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (watcher_.joinable()) watcher_.join();
}

std::string UsersFile::stamp() const {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return "";
  return std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + " " +
         std::to_string(st.st_size) + " " + std::to_string(st.st_ino);
}

std::shared_ptr<const UserDirectory> UsersFile::current() const {
  std::lock_guard<std::mutex> l(mu_);
  return users_;
}

void UsersFile::watch() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_cv_.wait_for(l, look_every_, [this] { return stopping_; })) {
    l.unlock();
    look();
    l.lock();
  }
}

void UsersFile::look() {
  const std::string seen = stamp();
  if (seen == stamp_ || seen.empty()) return;
  stamp_ = seen;
  auto users = UserDirectory::load(path_);
  if (!users.ok()) {
    spdlog::error("users file changed but is not used: {} (the users read before stay)",
                  users.status().message());
    return;
  }
  auto fresh = std::make_shared<const UserDirectory>(std::move(users).value());
  spdlog::info("users file {} read again: {} users", path_, fresh->users().size());
  std::lock_guard<std::mutex> l(mu_);
  users_ = std::move(fresh);
}

}  // namespace lizard
