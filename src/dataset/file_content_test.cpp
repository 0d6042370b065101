#include "dataset/file_content.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "common/sha256.h"
#include "dataset/test_files.h"

namespace lizard {
namespace {

std::string digest_of(const std::string& path) {
  auto file = InputFile::open(path);
  EXPECT_TRUE(file.ok()) << file.status().message();
  if (!file.ok()) return "";
  auto d = content_sha256(*file);
  EXPECT_TRUE(d.ok()) << d.status().message();
  return d.ok() ? *d : "";
}

// Writes `bytes` over the start of the file through a shared mapping, as a
// program that maps a dataset file and changes it in place does.
void write_through_mapping(const std::string& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  void* at = ::mmap(nullptr, bytes.size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(at, MAP_FAILED) << std::strerror(errno);
  std::memcpy(at, bytes.data(), bytes.size());
  ::munmap(at, bytes.size());
  ::close(fd);
}

TEST(FileContent, TheDigestIsTheSha256OfEveryByte) {
  TempDir dir;
  std::string bytes(9 << 20, 'a');  // more than one read's worth
  bytes[5 << 20] = 'b';
  const std::string path = dir.write("x.bin", bytes);
  EXPECT_EQ(digest_of(path), sha256_hex(bytes));
  EXPECT_EQ(digest_of(dir.write("empty.bin", "")), sha256_hex(""));
}

TEST(FileContent, TheSameBytesPassTheirPin) {
  TempDir dir;
  const std::string path = dir.write("x.bin", std::string(4096, 'a'));
  PinnedFile pin{"x", path, *FileIdentity::of(path), digest_of(path)};
  EXPECT_TRUE(check_pinned_content(pin).ok());
}

// The case no identity sees on tmpfs: new bytes, the same size, inode and
// (there) times.  Checked wherever the test's files lie.
TEST(FileContent, BytesWrittenThroughASharedMappingFailThePin) {
  TempDir dir;
  const std::string path = dir.write("x.bin", std::string(4096, 'a'));
  PinnedFile pin{"x", path, *FileIdentity::of(path), digest_of(path)};
  write_through_mapping(path, "bbbb");
  Status st = check_pinned_content(pin);
  EXPECT_EQ(st.code(), Code::kConflict);
  EXPECT_EQ(st.message().rfind(path + " changed since the run first read it: its content", 0), 0u)
      << st.message();
}

TEST(FileContent, AGoneFileFailsThePinAndNoDigestChecksNothing) {
  TempDir dir;
  const std::string path = dir.write("x.bin", "abc");
  PinnedFile pin{"x", path, *FileIdentity::of(path), digest_of(path)};
  PinnedFile unverified = pin;
  unverified.content_sha256.clear();
  ASSERT_EQ(::unlink(path.c_str()), 0);
  EXPECT_EQ(check_pinned_content(pin).code(), Code::kConflict);
  EXPECT_TRUE(check_pinned_content(unverified).ok());
}

TEST(FileContent, VerifyIsIdentityOrContent) {
  EXPECT_EQ(*parse_file_verify("identity"), FileVerify::kIdentity);
  EXPECT_EQ(*parse_file_verify("content"), FileVerify::kContent);
  auto bad = parse_file_verify("bytes");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "`verify` must be \"identity\" (the default) or \"content\", not \"bytes\"");
}

}  // namespace
}  // namespace lizard
