// BuildStore: what is put comes back with the digest it was offered with,
// the bound drops the least recently used first, a program's builds go
// with it, and the entries survive a reopening.
#include "buildstore/build_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/sha256.h"

namespace lizard {
namespace {

namespace fs = std::filesystem;

const std::string kProgramA(64, 'a');
const std::string kProgramB(64, 'b');

std::string key(char c) {
  return std::string(64, c);
}

class BuildStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("lizard-build-store-test-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  Status put(BuildStore& s, char k, const std::string& program, const std::string& payload) {
    return s.put(key(k), program, payload, sha256_hex(payload));
  }
  fs::path dir_;
};

TEST_F(BuildStoreTest, WhatIsPutComesBackWithItsDigest) {
  BuildStore s(dir_.string(), 1 << 20);
  ASSERT_TRUE(put(s, '1', kProgramA, "the build's bytes").ok());
  auto b = s.get(key('1'));
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->payload, "the build's bytes");
  EXPECT_EQ(b->sha256, sha256_hex("the build's bytes"));
  EXPECT_EQ(s.get(key('2')).status().code(), Code::kNotFound);
  EXPECT_TRUE(fs::is_regular_file(dir_ / kProgramA / (key('1') + ".build")));
}

// Each entry takes 64 bytes of digest and its payload: room for three.
TEST_F(BuildStoreTest, TheBoundDropsTheLeastRecentlyUsedFirst) {
  const std::string payload(100, 'x');
  BuildStore s(dir_.string(), 3 * (64 + 100));
  ASSERT_TRUE(put(s, '1', kProgramA, payload).ok());
  ASSERT_TRUE(put(s, '2', kProgramA, payload).ok());
  ASSERT_TRUE(put(s, '3', kProgramB, payload).ok());
  ASSERT_TRUE(s.get(key('1')).ok());  // 2 is now the least recently used
  ASSERT_TRUE(put(s, '4', kProgramB, payload).ok());
  EXPECT_EQ(s.size(), 3u);
  EXPECT_TRUE(s.contains(key('1')));
  EXPECT_FALSE(s.contains(key('2')));
  EXPECT_FALSE(fs::exists(dir_ / kProgramA / (key('2') + ".build")));
  EXPECT_TRUE(s.contains(key('3')));
  EXPECT_TRUE(s.contains(key('4')));
  EXPECT_LE(s.bytes(), 3u * (64 + 100));
}

TEST_F(BuildStoreTest, RefusesABuildLargerThanTheBoundAndNamesThatAreNotHex) {
  BuildStore s(dir_.string(), 1000);
  EXPECT_EQ(put(s, '1', kProgramA, std::string(1000, 'x')).code(), Code::kInvalidArgument);
  EXPECT_EQ(s.put("../../etc", kProgramA, "x", sha256_hex("x")).code(), Code::kInvalidArgument);
  EXPECT_EQ(s.put(key('1'), "../a", "x", sha256_hex("x")).code(), Code::kInvalidArgument);
  EXPECT_EQ(s.put(key('1'), kProgramA, "x", "not a digest").code(), Code::kInvalidArgument);
  EXPECT_EQ(s.size(), 0u);
}

TEST_F(BuildStoreTest, DroppingAProgramRemovesItsBuildsOnly) {
  BuildStore s(dir_.string(), 1 << 20);
  ASSERT_TRUE(put(s, '1', kProgramA, "a1").ok());
  ASSERT_TRUE(put(s, '2', kProgramA, "a2").ok());
  ASSERT_TRUE(put(s, '3', kProgramB, "b3").ok());
  EXPECT_EQ(s.drop_program(kProgramA), 2u);
  EXPECT_FALSE(s.contains(key('1')));
  EXPECT_FALSE(s.contains(key('2')));
  EXPECT_TRUE(s.get(key('3')).ok());
  EXPECT_FALSE(fs::exists(dir_ / kProgramA));
  EXPECT_EQ(s.bytes(), 64u + 2u);
}

TEST_F(BuildStoreTest, EntriesSurviveReopeningInTheirOrderOfUse) {
  {
    BuildStore s(dir_.string(), 1 << 20);
    ASSERT_TRUE(put(s, '1', kProgramA, "first").ok());
    ASSERT_TRUE(put(s, '2', kProgramA, "second").ok());
  }
  // Older mtime: used longer ago.
  fs::last_write_time(dir_ / kProgramA / (key('1') + ".build"),
                      fs::file_time_type::clock::now() - std::chrono::hours(2));
  std::ofstream(dir_ / kProgramA / (key('9') + ".build.tmp.1.0")) << "cut short";
  BuildStore reopened(dir_.string(), 2 * 64 + 11);  // room for "second" and "first" only
  EXPECT_EQ(reopened.size(), 2u);
  EXPECT_EQ(reopened.get(key('2'))->payload, "second");
  EXPECT_FALSE(fs::exists(dir_ / kProgramA / (key('9') + ".build.tmp.1.0")));
  ASSERT_TRUE(put(reopened, '3', kProgramA, "x").ok());  // drops '1', the oldest
  EXPECT_FALSE(reopened.contains(key('1')));
  EXPECT_TRUE(reopened.contains(key('2')));
}

// The digest comes from the offer, not from the file: a changed file is
// served as it is, with the digest it no longer has.
TEST_F(BuildStoreTest, AFileChangedOnDiskKeepsTheDigestItWasOfferedWith) {
  BuildStore s(dir_.string(), 1 << 20);
  ASSERT_TRUE(put(s, '1', kProgramA, "abcdef").ok());
  const fs::path file = dir_ / kProgramA / (key('1') + ".build");
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(64 + 2);
  f.put('X');
  f.close();
  auto b = s.get(key('1'));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->payload, "abXdef");
  EXPECT_EQ(b->sha256, sha256_hex("abcdef"));
}

}  // namespace
}  // namespace lizard
