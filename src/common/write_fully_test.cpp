#include "common/write_fully.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

namespace lizard {
namespace {

// Every byte arrives, in order, across many pieces; a closed descriptor is
// its errno.
TEST(WriteFully, WritesEveryByteInPiecesAndSaysWhyItCouldNot) {
  std::string bytes(3 * kWritePieceBytes + 12345, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 + i / 4093);
  char path[] = "/tmp/lizard-write-fully-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(write_fully(fd, bytes.data(), bytes.size()), 0);
  EXPECT_EQ(write_fully(fd, bytes.data(), 0), 0);
  ::close(fd);
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(std::string(std::istreambuf_iterator<char>(in), {}) == bytes);
  std::remove(path);
  EXPECT_EQ(write_fully(fd, bytes.data(), 1), EBADF);
}

}  // namespace
}  // namespace lizard
