#include "dataset/data_roots.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "dataset/test_files.h"

namespace lizard {
namespace {

namespace fs = std::filesystem;

class DataRootsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_.path() + "/data";
    outside_ = dir_.path() + "/secret";
    fs::create_directories(root_ + "/sub");
    fs::create_directories(outside_);
    std::ofstream(root_ + "/sub/ok.csv") << "1\n";
    std::ofstream(outside_ + "/shadow") << "root:x\n";
  }
  DataRoots roots() {
    auto r = DataRoots::make({root_}, "server");
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.value();
  }
  TempDir dir_;
  std::string root_, outside_;
};

TEST_F(DataRootsTest, UnconfinedAllowsEveryPath) {
  DataRoots none;
  EXPECT_FALSE(none.confined());
  EXPECT_TRUE(none.check("/etc/shadow").ok());
}

TEST_F(DataRootsTest, AllowsFilesBelowARoot) {
  EXPECT_TRUE(roots().check(root_ + "/sub/ok.csv").ok());
  EXPECT_TRUE(roots().check(root_ + "/sub/../sub/ok.csv").ok());
  EXPECT_TRUE(roots().check(root_ + "/not-yet-there.csv").ok());  // open fails later, inside
}

TEST_F(DataRootsTest, RefusesPathsOutsideWithoutDetail) {
  for (const std::string& p :
       {outside_ + "/shadow", std::string("/etc/shadow"), root_ + "/../secret/shadow", root_,
        root_ + "/../data-x", std::string()}) {
    Status st = roots().check(p);
    EXPECT_EQ(st.code(), Code::kPermissionDenied) << p;
    EXPECT_EQ(st.message().find("shadow"), std::string::npos) << st.message();
    EXPECT_EQ(st.message(), "dataset path is outside the server's data roots (--data-root)");
  }
}

TEST_F(DataRootsTest, ResolvesSymlinksBeforeDeciding) {
  fs::create_symlink(outside_ + "/shadow", root_ + "/link");
  fs::create_directory_symlink(outside_, root_ + "/dirlink");
  EXPECT_EQ(roots().check(root_ + "/link").code(), Code::kPermissionDenied);
  EXPECT_EQ(roots().check(root_ + "/dirlink/shadow").code(), Code::kPermissionDenied);
  // A root given through a symlink is resolved too.
  fs::create_directory_symlink(root_, dir_.path() + "/alias");
  auto via_alias = DataRoots::make({dir_.path() + "/alias"}, "worker");
  ASSERT_TRUE(via_alias.ok());
  EXPECT_TRUE(via_alias->check(root_ + "/sub/ok.csv").ok());
}

TEST_F(DataRootsTest, MakeRefusesAMissingDirectory) {
  auto r = DataRoots::make({dir_.path() + "/nope"}, "server");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a directory"), std::string::npos);
}

}  // namespace
}  // namespace lizard
