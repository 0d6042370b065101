#include "common/regular_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

namespace lizard {
namespace {

namespace fs = std::filesystem;

class RegularFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("lizard-regular-file-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(RegularFileTest, ReadsARegularFileWhole) {
  std::ofstream(dir_ / "a.txt", std::ios::binary) << std::string(100000, 'x') << "end";
  auto bytes = read_regular_file((dir_ / "a.txt").string());
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  EXPECT_EQ(bytes->size(), 100003u);
  EXPECT_EQ(bytes->substr(100000), "end");
  EXPECT_TRUE(regular_file_exists((dir_ / "a.txt").string()));
}

TEST_F(RegularFileTest, AFifoIsRefusedAtOnce) {
  const std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  auto bytes = read_regular_file(fifo);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(bytes.status().message(), "cannot open " + fifo + ": not a regular file");
  EXPECT_FALSE(regular_file_exists(fifo));
}

TEST_F(RegularFileTest, ADirectoryAndAMissingFileAreRefused) {
  auto dir = open_regular_file(dir_.string());
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("Is a directory"), std::string::npos);
  auto missing = read_regular_file((dir_ / "none").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_FALSE(regular_file_exists((dir_ / "none").string()));
}

TEST_F(RegularFileTest, TheDescriptorBlocksAgainOnceOpened) {
  std::ofstream(dir_ / "a.txt") << "x";
  auto fd = open_regular_file((dir_ / "a.txt").string());
  ASSERT_TRUE(fd.ok());
  EXPECT_EQ(::fcntl(*fd, F_GETFL) & O_NONBLOCK, 0);
  EXPECT_NE(::fcntl(*fd, F_GETFD) & FD_CLOEXEC, 0);
  ::close(*fd);
}

}  // namespace
}  // namespace lizard
