#include "common/sealed_memory.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace lizard {
namespace {

SealedMemory make_filled(const std::string& bytes) {
  auto made = SealedMemory::make(bytes.size(), [&](char* to) {
    std::memcpy(to, bytes.data(), bytes.size());
    return Status::Ok();
  });
  EXPECT_TRUE(made.ok()) << made.status().message();
  return std::move(made).value();
}

TEST(SealedMemory, MapsBackTheBytesItWasFilledWith) {
  const std::string bytes(3 << 20, 'x');
  SealedMemory made = make_filled(bytes + "end");
  auto mapped = MappedSealedMemory::map(OwnedFd(::dup(made.fd())), made.size());
  ASSERT_TRUE(mapped.ok()) << mapped.status().message();
  EXPECT_EQ((*mapped)->bytes(), bytes + "end");
  // Sealed: the maker (or anyone holding the file) can neither change nor shrink it.
  EXPECT_NE(::ftruncate(made.fd(), 10), 0);
  EXPECT_EQ(::mmap(nullptr, 4096, PROT_WRITE, MAP_SHARED, made.fd(), 0), MAP_FAILED);
}

TEST(SealedMemory, AFillThatFailsMakesNone) {
  auto made = SealedMemory::make(4096, [](char*) { return internal_error("device lost"); });
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().message(), "device lost");
}

// A receiver maps only a file that cannot shrink under it, of the size announced.
TEST(MappedSealedMemory, RefusesAFileThatIsNotSealedOrNotTheSizeAnnounced) {
  OwnedFd open_file(::memfd_create("not-sealed", MFD_CLOEXEC));
  ASSERT_GE(open_file.get(), 0);
  ASSERT_EQ(::ftruncate(open_file.get(), 4096), 0);
  auto unsealed = MappedSealedMemory::map(std::move(open_file), 4096);
  ASSERT_FALSE(unsealed.ok());
  EXPECT_NE(unsealed.status().message().find("not a sealed memory file"), std::string::npos);

  SealedMemory made = make_filled(std::string(4096, 'y'));
  auto wrong_size = MappedSealedMemory::map(OwnedFd(::dup(made.fd())), 8192);
  ASSERT_FALSE(wrong_size.ok());
  EXPECT_NE(wrong_size.status().message().find("not the 8192 announced"), std::string::npos);

  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  ::close(pipe_fds[1]);
  EXPECT_FALSE(MappedSealedMemory::map(OwnedFd(pipe_fds[0]), 0).ok());
}

TEST(SealedMemory, EmptyBytesMapToAnEmptyView) {
  SealedMemory made = make_filled("");
  auto mapped = MappedSealedMemory::map(OwnedFd(::dup(made.fd())), 0);
  ASSERT_TRUE(mapped.ok()) << mapped.status().message();
  EXPECT_TRUE((*mapped)->bytes().empty());
}

}  // namespace
}  // namespace lizard
