#include "client/upload_rows.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <vector>

#include "sandbox/sandbox.h"

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

// An executor process in its sandbox may not look into its worker's /proc
// entry: it opens the rows by a path of their own, which goes with them.
TEST(UploadRows, AnExecutorInItsSandboxOpensTheRowsByTheirOwnPath) {
  if (!std::filesystem::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm";
  const std::vector<uint8_t> bytes = counting(4096);
  auto rows = UploadRows::create(bytes.size());
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_TRUE((*rows)->write(0, bytes.data(), bytes.size()).ok());
  auto range = (*rows)->file_range(1000, 100);
  ASSERT_TRUE(range.ok());
  const std::string path = range->path;
  EXPECT_EQ(path.rfind("/dev/shm/", 0), 0u) << path;
  const pid_t child = ::fork();
  if (child == 0) {
    SandboxSpec executor;  // as an executor host's: reads open, writes beneath its caches
    executor.allow_processes = true;
    (void)enter_sandbox(executor);
    const int fd = ::open(path.c_str(), O_RDONLY);
    uint8_t b = 0;
    ::_exit(fd >= 0 && ::pread(fd, &b, 1, 1000) == 1 && b == bytes[1000] ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  rows->reset();
  EXPECT_FALSE(std::filesystem::exists(path)) << "the file outlived its rows";
}

TEST(UploadRows, AKilledWorkersFilesAreRemovedByTheNext) {
  if (!std::filesystem::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm";
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);
  const std::string stale = "/dev/shm/lizard-rows-" + std::to_string(gone) + "-0";
  std::ofstream(stale) << "left by a killed worker";
  auto mine = UploadRows::create(16);
  ASSERT_TRUE(mine.ok());
  const std::string live = (*mine)->file_range(0, 16)->path;
  UploadRows::remove_stale_files();
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(live)) << "a running worker's file was removed";
}

}  // namespace
}  // namespace lizard
