// LineReader: the lines of an InputFile, read sequentially through one large
// buffer.  Lines are returned without their "\n" (or "\r\n"); a last line
// with no newline is still a line.  Skipping lines only looks for newlines.
//
//   LineReader lines(&file);
//   std::string_view line;
//   while (lines.next(&line)) use(lines.line_number(), line);
//   if (!lines.status().ok()) return lines.status();
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "dataset/input_file.h"

namespace lizard {

class LineReader {
 public:
  static constexpr size_t kDefaultBufferSize = 4 << 20;

  // Reads `file` from its current position; the buffer grows for longer lines.
  explicit LineReader(InputFile* file, size_t buffer_size = kDefaultBufferSize);

  // The next line, valid until the next call; false at the end or on error.
  bool next(std::string_view* line);
  // Skips up to n lines; returns how many were skipped (fewer at the end).
  int64_t skip(int64_t n);
  // 1-based number of the line last returned or skipped (0 before the first).
  int64_t line_number() const { return line_number_; }
  // Not ok when reading the file failed.
  const Status& status() const { return status_; }

 private:
  // Moves unread bytes to the front and reads more; false when nothing was added.
  bool fill();

  InputFile* file_;
  std::vector<char> buf_;
  size_t begin_ = 0;  // unread bytes are buf_[begin_, end_)
  size_t end_ = 0;
  bool eof_ = false;
  int64_t line_number_ = 0;
  Status status_;
};

}  // namespace lizard
