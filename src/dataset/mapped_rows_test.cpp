#include "dataset/mapped_rows.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "dataset/npy.h"
#include "dataset/test_files.h"

namespace lizard {
namespace {

TEST(MappedRows, ViewsTheRowsOfAnNpyFileInPlace) {
  TempDir dir;
  std::vector<int32_t> v(300);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(i * 7);
  const std::string path = dir.write("m.npy", npy_bytes(DType::kInt32, {100, 3}, v.data()));
  auto m = MappedRows::open(path, FileFormat::kNpy, DType::kInt32, 3);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ((*m)->row_count(), 100);
  EXPECT_EQ((*m)->row_bytes(), 12u);
  auto rows = (*m)->rows(10, 5);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 5u * 12);
  EXPECT_EQ(std::memcmp(rows->data(), v.data() + 30, rows->size()), 0);
  EXPECT_TRUE((*m)->rows(100, 0).ok());
  EXPECT_FALSE((*m)->rows(98, 3).ok());
  EXPECT_FALSE((*m)->rows(-1, 1).ok());
}

TEST(MappedRows, RawFilesAndTheSameChecksAsReading) {
  TempDir dir;
  const std::string raw = dir.write("r.bin", std::string(40, '\x01'));
  auto m = MappedRows::open(raw, FileFormat::kRaw, DType::kFloat64, 1);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ((*m)->row_count(), 5);
  EXPECT_FALSE(MappedRows::open(raw, FileFormat::kRaw, DType::kFloat64, 3).ok());  // 40 % 24
  const std::string npy = dir.write("f.npy", npy_bytes(DType::kFloat32, {4}, "0123456789abcdef"));
  auto wrong = MappedRows::open(npy, FileFormat::kNpy, DType::kInt32, 1);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("expected <i4"), std::string::npos)
      << wrong.status().message();
  EXPECT_FALSE(MappedRows::open(dir.path("missing.npy"), FileFormat::kNpy, DType::kInt32, 1).ok());
  EXPECT_FALSE(
      MappedRows::open(dir.write("t.csv", "1\n"), FileFormat::kCsv, DType::kInt32, 1).ok());
}

}  // namespace
}  // namespace lizard
