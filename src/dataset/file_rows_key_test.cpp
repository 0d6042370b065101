#include "dataset/file_rows_key.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "dataset/test_files.h"

namespace lizard {
namespace {

std::string int32_rows(std::initializer_list<int32_t> v) {
  std::string bytes(v.size() * 4, '\0');
  std::memcpy(bytes.data(), v.begin(), bytes.size());
  return bytes;
}

FileRowsKey key_of(const std::string& path, int64_t first = 0, int64_t rows = 4) {
  auto id = FileIdentity::of(path);
  EXPECT_TRUE(id.ok()) << id.status().message();
  return FileRowsKey{
      id.ok() ? *id : FileIdentity{}, path, FileFormat::kRaw, DType::kInt32, 1, first, rows, ""};
}

TEST(FileRowsKey, NamesTheFileAndTheRowsAndReadsThem) {
  TempDir dir;
  const std::string path = dir.write("x.bin", int32_rows({1, 2, 3, 4}));
  const FileRowsKey k = key_of(path, 1, 2);
  EXPECT_EQ(k.bytes(), 8u);
  EXPECT_EQ(k.key().rfind(k.file.key_prefix(), 0), 0u);
  EXPECT_EQ(k.description(), path + " rows 1..3 (int32 x 1)");
  EXPECT_EQ(k.key(), key_of(path, 1, 2).key());  // the same file and rows: the same key
  EXPECT_NE(k.key(), key_of(path, 0, 2).key());  // other rows
  FileRowsKey wider = k;
  wider.width = 2, wider.rows = 1;
  EXPECT_NE(k.key(), wider.key());  // the same bytes read as other rows
  FileRowsKey a = k, b = k;         // the same identity, other bytes verified
  a.content_sha256 = std::string(64, 'a'), b.content_sha256 = std::string(64, 'b');
  EXPECT_NE(a.key(), k.key());
  EXPECT_NE(a.key(), b.key());
  EXPECT_EQ(a.key().rfind(k.key(), 0), 0u);  // placed by the same prefix
  int32_t out[2] = {};
  ASSERT_TRUE(read_rows_unchanged(k, reinterpret_cast<uint8_t*>(out)).ok());
  EXPECT_EQ(out[0], 2);
  EXPECT_EQ(out[1], 3);
}

TEST(FileRowsKey, ARewriteInPlaceIsAnotherKeyAndTheOldOneIsNeverRead) {
  TempDir dir;
  const std::string path = dir.write("x.bin", int32_rows({1, 2, 3, 4}));
  const FileRowsKey before = key_of(path);
  dir.write("x.bin", int32_rows({5, 6, 7, 8}));
  namespace fs = std::filesystem;
  fs::last_write_time(path, fs::last_write_time(path) + std::chrono::seconds(1));
  const FileRowsKey after = key_of(path);
  EXPECT_EQ(after.file.inode, before.file.inode);
  EXPECT_NE(after.key(), before.key());
  int32_t out[4] = {};
  Status st = read_rows_unchanged(before, reinterpret_cast<uint8_t*>(out));
  EXPECT_EQ(st.code(), Code::kConflict) << st.message();
  EXPECT_TRUE(read_rows_unchanged(after, reinterpret_cast<uint8_t*>(out)).ok());
  EXPECT_EQ(out[0], 5);
}

TEST(FileRowsKey, AReplacementByRenameIsAnotherKey) {
  TempDir dir;
  const std::string path = dir.write("x.bin", int32_rows({1, 2, 3, 4}));
  const FileRowsKey before = key_of(path);
  const std::string next = dir.write("y.bin", int32_rows({1, 2, 3, 4}));
  std::filesystem::last_write_time(next, std::filesystem::last_write_time(path));
  ASSERT_EQ(std::rename(next.c_str(), path.c_str()), 0);
  const FileRowsKey after = key_of(path);
  EXPECT_EQ(after.file.mtime_ns, before.file.mtime_ns);
  EXPECT_NE(after.key(), before.key());
  int32_t out[4] = {};
  EXPECT_EQ(read_rows_unchanged(before, reinterpret_cast<uint8_t*>(out)).code(), Code::kConflict);
}

TEST(FileRowsKey, AMissingFileIsNotFound) {
  EXPECT_EQ(FileIdentity::of("/nonexistent/lizard/x.bin").status().code(), Code::kNotFound);
}

}  // namespace
}  // namespace lizard
