#include "dataset/file_identity.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "dataset/test_files.h"

namespace lizard {
namespace {

FileIdentity identity_of(const std::string& path) {
  auto id = FileIdentity::of(path);
  EXPECT_TRUE(id.ok()) << id.status().message();
  return id.ok() ? *id : FileIdentity{};
}

TEST(FileIdentity, TheSameVersionPassesItsPin) {
  TempDir dir;
  const std::string path = dir.write("x.bin", std::string(16, 'a'));
  const PinnedFile pin{"x", path, identity_of(path), ""};
  EXPECT_TRUE(check_pinned(pin, identity_of(path)).ok());
  EXPECT_EQ(version_changes(pin.identity, identity_of(path)), "");
  FileIdentity elsewhere = pin.identity;  // the same shared file, seen from another machine
  elsewhere.device += 1;
  EXPECT_TRUE(check_pinned(pin, elsewhere).ok());
}

TEST(FileIdentity, AGrownFileFailsItsPinNamingTheSizes) {
  TempDir dir;
  const std::string path = dir.write("x.bin", std::string(16, 'a'));
  const PinnedFile pin{"x", path, identity_of(path), ""};
  dir.write("x.bin", std::string(32, 'b'));
  Status st = check_pinned(pin, identity_of(path));
  EXPECT_EQ(st.code(), Code::kConflict);
  EXPECT_EQ(st.message().rfind(path + " changed since the run first read it: size 16 -> 32", 0), 0u)
      << st.message();
}

// Rewritten with the mtime put back by utimensat: the ctime, which no user
// can set, still tells the versions apart, and so do their keys.
TEST(FileIdentity, ARewriteWithItsMtimePutBackMovesTheCtime) {
  TempDir dir;
  const std::string path = dir.write("x.bin", std::string(16, 'a'));
  const FileIdentity before = identity_of(path);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past a clock tick
  const auto mtime = std::filesystem::last_write_time(path);
  dir.write("x.bin", std::string(16, 'b'));
  std::filesystem::last_write_time(path, mtime);
  const FileIdentity after = identity_of(path);
  EXPECT_EQ(after.inode, before.inode);
  EXPECT_EQ(after.size, before.size);
  EXPECT_EQ(after.mtime_ns, before.mtime_ns);
  EXPECT_NE(after.key_prefix(), before.key_prefix());
  const std::string changes = version_changes(before, after);
  EXPECT_EQ(changes.rfind("ctime ", 0), 0u) << changes;
  EXPECT_EQ(check_pinned({"x", path, before, ""}, after).code(), Code::kConflict);
}

}  // namespace
}  // namespace lizard
