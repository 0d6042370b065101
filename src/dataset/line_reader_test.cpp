#include "dataset/line_reader.h"

#include <gtest/gtest.h>

#include "dataset/test_files.h"

namespace lizard {
namespace {

std::vector<std::string> all_lines(const std::string& path, size_t buffer_size) {
  auto file = InputFile::open(path);
  EXPECT_TRUE(file.ok()) << file.status().message();
  LineReader lines(&*file, buffer_size);
  std::vector<std::string> out;
  std::string_view line;
  while (lines.next(&line)) {
    out.emplace_back(line);
    EXPECT_EQ(lines.line_number(), static_cast<int64_t>(out.size()));
  }
  EXPECT_TRUE(lines.status().ok());
  return out;
}

TEST(DatasetLineReader, SplitsLinesAcrossSmallBuffers) {
  TempDir dir;
  std::string text = "first\r\nsecond line is longer than the buffer\n\nlast";
  std::string path = dir.write("lines.txt", text);
  std::vector<std::string> expected = {"first", "second line is longer than the buffer", "",
                                       "last"};
  for (size_t size : {16, 17, 23, 64, 4096}) EXPECT_EQ(all_lines(path, size), expected) << size;
  dir.write("nl.txt", "a\nb\n");
  EXPECT_EQ(all_lines(dir.path("nl.txt"), 16), (std::vector<std::string>{"a", "b"}));
  dir.write("empty.txt", "");
  EXPECT_TRUE(all_lines(dir.path("empty.txt"), 16).empty());
}

TEST(DatasetLineReader, SkipCountsLinesIncludingAnUnterminatedLast) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 100; ++i) text += "line " + std::to_string(i) + (i < 99 ? "\n" : "");
  std::string path = dir.write("lines.txt", text);
  for (size_t size : {16, 50, 4096}) {
    auto file = InputFile::open(path);
    ASSERT_TRUE(file.ok());
    LineReader lines(&*file, size);
    EXPECT_EQ(lines.skip(37), 37);
    std::string_view line;
    ASSERT_TRUE(lines.next(&line));
    EXPECT_EQ(line, "line 37");
    EXPECT_EQ(lines.line_number(), 38);
    EXPECT_EQ(lines.skip(1000), 62);  // 38..99, the last without a newline
    EXPECT_FALSE(lines.next(&line));
  }
}

TEST(DatasetInputFile, MissingFileNamesThePathAndReason) {
  auto file = InputFile::open("/nonexistent/points.csv");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().message(),
            "cannot open /nonexistent/points.csv: No such file or directory");
  TempDir dir;
  auto d = InputFile::open(dir.path(""));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("Is a directory"), std::string::npos);
}

TEST(DatasetInputFile, ReadAtPastTheEndNamesTheOffset) {
  TempDir dir;
  auto file = InputFile::open(dir.write("f.bin", "0123456789"));
  ASSERT_TRUE(file.ok());
  char buf[8];
  ASSERT_TRUE(file->read_at(2, 8, buf).ok());
  EXPECT_EQ(std::string(buf, 8), "23456789");
  Status s = file->read_at(4, 8, buf);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("unexpected end of file at byte offset 10"), std::string::npos);
}

}  // namespace
}  // namespace lizard
