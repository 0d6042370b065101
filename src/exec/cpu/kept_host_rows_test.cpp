#include "exec/cpu/kept_host_rows.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

namespace lizard {
namespace {

// Each run's view holds the kept rows; what a run writes stays in its view.
TEST(KeptHostRows, EachRunSeesTheKeptRowsAndItsWritesStayItsOwn) {
  std::vector<uint8_t> rows(3 << 20);
  std::iota(rows.begin(), rows.end(), 0);
  auto kept = KeptHostRows::make(rows.size(), [&](uint8_t* to) {
    std::memcpy(to, rows.data(), rows.size());
    return Status::Ok();
  });
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  EXPECT_EQ(kept->size(), rows.size());
  auto first = kept->view_for_run();
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_EQ(first->size(), rows.size());
  EXPECT_EQ(std::memcmp(first->data(), rows.data(), rows.size()), 0);
  std::memset(first->data(), 0xff, first->size());  // a kernel writing into its input rows
  auto second = kept->view_for_run();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(std::memcmp(second->data(), rows.data(), rows.size()), 0);
  // The rows outlive the kept copy's own handle while a run maps them.
  KeptHostRows moved = std::move(kept).value();
  { KeptHostRows gone = std::move(moved); }
  EXPECT_EQ(std::memcmp(second->data(), rows.data(), rows.size()), 0);
}

// The descriptors of this process whose target is the kept rows' memory file.
std::vector<int> kept_rows_fds() {
  std::vector<int> fds;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(e.path(), ec).string();
    if (!ec && target.rfind("/memfd:lizard-kept-rows", 0) == 0)
      fds.push_back(std::stoi(e.path().filename().string()));
  }
  return fds;
}

// A kernel that finds the memory file among its process's descriptors can
// neither write it, resize it, nor map it shared and writable: the next run
// reads the rows as they were kept.
TEST(KeptHostRows, AKernelCannotWriteTheKeptRowsThroughTheirMemoryFile) {
  std::vector<uint8_t> rows(1 << 16, 7);
  auto kept = KeptHostRows::make(rows.size(), [&](uint8_t* to) {
    std::memcpy(to, rows.data(), rows.size());
    return Status::Ok();
  });
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  const std::vector<int> fds = kept_rows_fds();
  ASSERT_EQ(fds.size(), 1u);
  const int fd = fds[0];
  const uint8_t poison[16] = {};
  EXPECT_EQ(::pwrite(fd, poison, sizeof poison, 0), -1);
  EXPECT_EQ(errno, EPERM);
  EXPECT_NE(::ftruncate(fd, 0), 0);
  EXPECT_EQ(::mmap(nullptr, rows.size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), MAP_FAILED);
  // Nor through a descriptor of its own, opened by path.
  const int reopened = ::open(("/proc/self/fd/" + std::to_string(fd)).c_str(), O_RDWR);
  if (reopened >= 0) {
    EXPECT_EQ(::pwrite(reopened, poison, sizeof poison, 0), -1);
    ::close(reopened);
  }
  auto view = kept->view_for_run();
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(std::memcmp(view->data(), rows.data(), rows.size()), 0);
}

TEST(KeptHostRows, EmptyRowsAndAFailedFill) {
  auto empty = KeptHostRows::make(0, [](uint8_t*) { return Status::Ok(); });
  ASSERT_TRUE(empty.ok());
  auto view = empty->view_for_run();
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->data(), nullptr);
  auto failed = KeptHostRows::make(4096, [](uint8_t*) { return not_found("the file went"); });
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(), "the file went");
}

}  // namespace
}  // namespace lizard
