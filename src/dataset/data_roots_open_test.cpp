// Opening dataset files where they are read: never blocking on a FIFO, and
// within the data roots even when a symlink is swapped in after the check.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>

#include "dataset/beneath_open.h"
#include "dataset/data_roots.h"
#include "dataset/dataset_file.h"
#include "dataset/test_files.h"

namespace lizard {
namespace {

namespace fs = std::filesystem;

class DataRootsOpenTest : public ::testing::TestWithParam<BeneathMethod> {
 protected:
  void SetUp() override {
    root_ = dir_.path() + "/data";
    outside_ = dir_.path() + "/secret";
    fs::create_directories(root_ + "/sub");
    fs::create_directories(outside_);
    std::ofstream(root_ + "/sub/ok.csv") << "1\n2\n";
    std::ofstream(outside_ + "/shadow") << "root:x\n";
  }
  DataRoots roots(const std::string& who = "server") {
    auto r = DataRoots::make({root_}, who);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.value();
  }
  TempDir dir_;
  std::string root_, outside_;
};

INSTANTIATE_TEST_SUITE_P(Methods, DataRootsOpenTest,
                         ::testing::Values(BeneathMethod::kBest, BeneathMethod::kComponentWalk));

TEST_P(DataRootsOpenTest, AFileBelowTheRootOpensAndReads) {
  DataRoots r = roots();
  auto at = r.locate(root_ + "/sub/../sub/ok.csv");
  ASSERT_TRUE(at.ok()) << at.status().message();
  auto file = r.open(at.value(), GetParam());
  ASSERT_TRUE(file.ok()) << file.status().message();
  auto rows = count_rows(&file.value(), FileFormat::kCsv, DType::kFloat32, 1);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  EXPECT_EQ(rows.value(), 2);
}

TEST_P(DataRootsOpenTest, ASymlinkWithinTheRootIsFollowedAtTheCheck) {
  fs::create_symlink(root_ + "/sub/ok.csv", root_ + "/alias.csv");  // absolute, inside
  DataRoots r = roots();
  auto at = r.locate(root_ + "/alias.csv");
  ASSERT_TRUE(at.ok()) << at.status().message();
  EXPECT_TRUE(r.open(at.value(), GetParam()).ok());
}

TEST_P(DataRootsOpenTest, ASymlinkPointingOutsideIsRefused) {
  fs::create_symlink(outside_ + "/shadow", root_ + "/link.csv");
  auto file = roots().open(root_ + "/link.csv");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), Code::kPermissionDenied);
  EXPECT_EQ(file.status().message(),
            "dataset path is outside the server's data roots (--data-root)");
}

TEST_P(DataRootsOpenTest, AFileSwappedForASymlinkAfterTheCheckIsRefused) {
  DataRoots r = roots();
  auto at = r.locate(root_ + "/sub/ok.csv");
  ASSERT_TRUE(at.ok());
  fs::remove(root_ + "/sub/ok.csv");
  fs::create_symlink(outside_ + "/shadow", root_ + "/sub/ok.csv");
  auto file = r.open(at.value(), GetParam());
  ASSERT_FALSE(file.ok()) << "followed a symlink swapped in after the check";
  EXPECT_EQ(file.status().code(), Code::kPermissionDenied);
  EXPECT_NE(file.status().message().find("changed as it was opened"), std::string::npos)
      << file.status().message();
}

TEST_P(DataRootsOpenTest, ADirectorySwappedForASymlinkAfterTheCheckIsRefused) {
  std::ofstream(outside_ + "/ok.csv") << "3\n";
  DataRoots r = roots();
  auto at = r.locate(root_ + "/sub/ok.csv");
  ASSERT_TRUE(at.ok());
  fs::rename(root_ + "/sub", root_ + "/old");
  fs::create_symlink(outside_, root_ + "/sub");
  auto file = r.open(at.value(), GetParam());
  ASSERT_FALSE(file.ok()) << "followed a symlink swapped in after the check";
  EXPECT_EQ(file.status().code(), Code::kPermissionDenied) << file.status().message();
}

TEST_P(DataRootsOpenTest, TheWorkersOwnRootsConfineToo) {
  fs::create_directories(dir_.path() + "/other");
  std::ofstream(dir_.path() + "/other/x.csv") << "1\n";
  auto own = DataRoots::make({root_}, "worker");
  ASSERT_TRUE(own.ok());
  DataRoots sent;  // the server has none
  auto outside = sent.open(dir_.path() + "/other/x.csv", &own.value());
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.status().message(),
            "dataset path is outside the worker's data roots (--data-root)");
  EXPECT_TRUE(sent.open(root_ + "/sub/ok.csv", &own.value()).ok());
}

// Runs `open` on a thread; a FIFO that blocks it is given a writer so
// that the test ends, and the test fails.
template <typename F>
auto without_blocking(const std::string& fifo, F open) {
  auto opened = std::async(std::launch::async, open);
  if (opened.wait_for(std::chrono::seconds(2)) == std::future_status::timeout) {
    ADD_FAILURE() << "opening a FIFO blocked";
    const int w = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
    ::close(w);
  }
  return opened.get();
}

TEST_P(DataRootsOpenTest, AFifoIsRefusedWithoutBlocking) {
  const std::string fifo = root_ + "/sub/pipe.csv";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto direct = without_blocking(fifo, [&] { return InputFile::open(fifo); });
  ASSERT_FALSE(direct.ok());
  EXPECT_NE(direct.status().message().find("not a regular file"), std::string::npos)
      << direct.status().message();
  DataRoots r = roots();
  auto confined = without_blocking(fifo, [&] {
    auto at = r.locate(fifo);
    return at.ok() ? r.open(at.value(), GetParam()) : Result<InputFile>(at.status());
  });
  ASSERT_FALSE(confined.ok());
  EXPECT_NE(confined.status().message().find("not a regular file"), std::string::npos)
      << confined.status().message();
  auto counted = without_blocking(
      fifo, [&] { return count_rows(fifo, FileFormat::kCsv, DType::kFloat32, 1); });
  EXPECT_FALSE(counted.ok());
}

}  // namespace
}  // namespace lizard
