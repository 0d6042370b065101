#include "client/upload_cache.h"

#include <gtest/gtest.h>

#include <vector>

namespace lizard {
namespace {

UploadCache::Rows rows(size_t n, uint8_t v) {
  auto made = UploadRows::create(n);
  EXPECT_TRUE(made.ok()) << made.status().message();
  const std::vector<uint8_t> bytes(n, v);
  EXPECT_TRUE((*made)->write(0, bytes.data(), n).ok());
  return std::move(made).value();
}

TEST(UploadCache, KeysNameTheUploadAndTheRows) {
  EXPECT_NE(UploadCache::key("u1", 0, 10, 8), UploadCache::key("u1", 10, 10, 8));
  EXPECT_NE(UploadCache::key("u1", 0, 10, 8), UploadCache::key("u1", 0, 10, 4));
  EXPECT_NE(UploadCache::key("u1", 0, 10, 8), UploadCache::key("u2", 0, 10, 8));
  EXPECT_NE(UploadCache::key("u1", 1, 10, 8), UploadCache::key("u1", 11, 0, 8));
}

TEST(UploadCache, FindsWhatWasPutAndEvictsTheLeastRecentlyUsed) {
  UploadCache c(100);
  c.put("a", rows(40, 1));
  c.put("b", rows(40, 2));
  ASSERT_TRUE(c.find("a"));  // a is now the most recent
  c.put("c", rows(40, 3));   // b goes
  EXPECT_TRUE(c.find("a"));
  EXPECT_FALSE(c.find("b"));
  ASSERT_TRUE(c.find("c"));
  EXPECT_EQ(c.find("c")->view(0, 1)[0], 3);
  EXPECT_EQ(c.bytes(), 80u);
}

TEST(UploadCache, RowsLargerThanTheBudgetAreNotKeptAndReplacingKeepsTheCount) {
  UploadCache c(100);
  c.put("big", rows(101, 1));
  EXPECT_FALSE(c.find("big"));
  EXPECT_EQ(c.bytes(), 0u);
  c.put("a", rows(30, 1));
  c.put("a", rows(50, 2));
  EXPECT_EQ(c.bytes(), 50u);
  EXPECT_EQ(c.find("a")->view(0, 1)[0], 2);
}

TEST(UploadCache, ABudgetOfZeroKeepsNothing) {
  UploadCache c(0);
  c.put("a", rows(1, 1));
  EXPECT_FALSE(c.find("a"));
}

}  // namespace
}  // namespace lizard
