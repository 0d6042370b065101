// UsersFile: a users file changed on disk is read again by the watcher, a
// change that does not parse keeps the users read before, and current()
// answers from memory, even once the file is gone.
#include "users/users_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

namespace lizard {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

std::string users_yaml(const std::string& name, const std::string& token) {
  return "users:\n  - name: " + name +
         "\n    role: user\n    token_sha256: " + UserDirectory::token_digest(token) + "\n";
}

// Replaces the file as an editor does: a new file renamed over it.
void replace(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".new";
  std::ofstream(tmp) << text;
  fs::rename(tmp, path);
}

// Whether `token` finds a user within `bound`.
bool found_within(const UsersFile& file, const std::string& token, milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (std::chrono::steady_clock::now() < deadline) {
    if (file.current()->find(token).has_value()) return true;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return file.current()->find(token).has_value();
}

class UsersFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("lizard_users_file_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    path_ = (dir_ / "users.yaml").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string path_;
};

TEST_F(UsersFileTest, AChangedFileIsReadAgainAndABrokenOneKeepsTheUsersBefore) {
  std::ofstream(path_) << users_yaml("alice", "tok-a");
  auto file = UsersFile::open(path_, milliseconds(20));
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ((*file)->current()->find("tok-a")->name, "alice");
  replace(path_, users_yaml("bob", "tok-b"));
  ASSERT_TRUE(found_within(**file, "tok-b", milliseconds(5000)));
  EXPECT_FALSE((*file)->current()->find("tok-a"));
  replace(path_, "users: [not: {a list");
  std::this_thread::sleep_for(milliseconds(200));  // ten looks
  EXPECT_EQ((*file)->current()->find("tok-b")->name, "bob");
  replace(path_, users_yaml("carol", "tok-c"));
  EXPECT_TRUE(found_within(**file, "tok-c", milliseconds(5000)));
}

TEST_F(UsersFileTest, CurrentAnswersFromMemoryWhenTheFileIsGone) {
  std::ofstream(path_) << users_yaml("alice", "tok-a");
  auto file = UsersFile::open(path_, milliseconds(20));
  ASSERT_TRUE(file.ok()) << file.status().message();
  fs::remove(path_);
  std::this_thread::sleep_for(milliseconds(100));
  ASSERT_TRUE((*file)->current()->find("tok-a"));
  EXPECT_EQ((*file)->current()->find("tok-a")->name, "alice");
}

TEST_F(UsersFileTest, AnUnreadableFileIsAnErrorAtOpen) {
  EXPECT_FALSE(UsersFile::open(path_).ok());  // no file yet
}

}  // namespace
}  // namespace lizard
