#include "users/users_file.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

namespace lizard {

Result<std::unique_ptr<UsersFile>> UsersFile::open(const std::string& path) {
  LIZARD_ASSIGN_OR_RETURN(UserDirectory users, UserDirectory::load(path));
  std::unique_ptr<UsersFile> file(new UsersFile(path));
  file->users_ = std::make_shared<const UserDirectory>(std::move(users));
  file->stamp_ = file->stamp();
  file->looked_ = std::chrono::steady_clock::now();
  return file;
}

std::string UsersFile::stamp() const {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return "";
  return std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + " " +
         std::to_string(st.st_size) + " " + std::to_string(st.st_ino);
}

std::shared_ptr<const UserDirectory> UsersFile::current() {
  std::lock_guard<std::mutex> l(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (now - looked_ < std::chrono::seconds(1)) return users_;
  looked_ = now;
  const std::string seen = stamp();
  if (seen == stamp_ || seen.empty()) return users_;
  stamp_ = seen;
  auto users = UserDirectory::load(path_);
  if (!users.ok()) {
    spdlog::error("users file changed but is not used: {} (the users read before stay)",
                  users.status().message());
    return users_;
  }
  users_ = std::make_shared<const UserDirectory>(std::move(users).value());
  spdlog::info("users file {} read again: {} users", path_, users_->users().size());
  return users_;
}

}  // namespace lizard
