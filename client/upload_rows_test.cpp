#include "client/upload_rows.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <numeric>
#include <vector>

namespace lizard {
namespace {

std::vector<uint8_t> counting(size_t n) {
  std::vector<uint8_t> v(n);
  std::iota(v.begin(), v.end(), uint8_t{0});
  return v;
}

TEST(UploadRows, ChunksWrittenInAnyOrderReadBackThroughTheMapping) {
  const std::vector<uint8_t> bytes = counting(10000);
  auto rows = UploadRows::create(bytes.size());
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_TRUE((*rows)->write(6000, bytes.data() + 6000, 4000).ok());
  ASSERT_TRUE((*rows)->write(0, bytes.data(), 6000).ok());
  const std::string_view all = (*rows)->view(0, bytes.size());
  ASSERT_EQ(all.size(), bytes.size());
  EXPECT_EQ(0, std::memcmp(all.data(), bytes.data(), bytes.size()));
  EXPECT_EQ((*rows)->view(9990, 10), std::string_view(all.data() + 9990, 10));
}

TEST(UploadRows, WritesAndRangesPastTheEndAreRefused) {
  auto rows = UploadRows::create(100);
  ASSERT_TRUE(rows.ok());
  const std::vector<uint8_t> bytes(10, 7);
  EXPECT_FALSE((*rows)->write(95, bytes.data(), 10).ok());
  EXPECT_FALSE((*rows)->write(101, bytes.data(), 0).ok());
  EXPECT_TRUE((*rows)->view(95, 10).empty());
  EXPECT_FALSE((*rows)->file_range(95, 10).ok());
}

// What an executor process does with the range: opens the path, checks the
// identity and reads the bytes (exec/file_rows.h), here from a child.
TEST(UploadRows, AnotherProcessReadsARangeThroughTheFilePipeline) {
  const std::vector<uint8_t> bytes = counting(1 << 20);
  auto rows = UploadRows::create(bytes.size());
  ASSERT_TRUE(rows.ok());
  ASSERT_TRUE((*rows)->write(0, bytes.data(), bytes.size()).ok());
  auto range = (*rows)->file_range(4096, 300000);
  ASSERT_TRUE(range.ok()) << range.status().message();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::vector<uint8_t> got(range->size);
    const bool ok = read_file_rows(*range, got.data(), 2).ok() &&
                    std::memcmp(got.data(), bytes.data() + 4096, got.size()) == 0;
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(UploadRows, ARangeTakenBeforeAWriteIsRefusedAfterIt) {
  const std::vector<uint8_t> bytes = counting(4096);
  auto rows = UploadRows::create(bytes.size());
  ASSERT_TRUE(rows.ok());
  ASSERT_TRUE((*rows)->write(0, bytes.data(), bytes.size()).ok());
  auto range = (*rows)->file_range(0, bytes.size());
  ASSERT_TRUE(range.ok());
  ::usleep(20000);  // past the file system's time granularity
  ASSERT_TRUE((*rows)->write(0, bytes.data(), 1).ok());
  std::vector<uint8_t> got(bytes.size());
  EXPECT_FALSE(read_file_rows(*range, got.data(), 1).ok());
}

}  // namespace
}  // namespace lizard
