#include "dataset/line_reader.h"

#include <cstring>

namespace lizard {

LineReader::LineReader(InputFile* file, size_t buffer_size)
    : file_(file), buf_(buffer_size < 16 ? 16 : buffer_size) {}

bool LineReader::fill() {
  if (eof_ || !status_.ok()) return false;
  if (begin_ > 0) {
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == buf_.size()) buf_.resize(buf_.size() * 2);
  Result<size_t> got = file_->read_some(buf_.size() - end_, buf_.data() + end_);
  if (!got.ok()) {
    status_ = got.status();
    return false;
  }
  if (*got == 0) eof_ = true;
  end_ += *got;
  return *got > 0;
}

bool LineReader::next(std::string_view* line) {
  size_t scanned = 0;  // bytes after begin_ known to hold no newline
  while (true) {
    const char* start = buf_.data() + begin_;
    const void* nl = std::memchr(start + scanned, '\n', end_ - begin_ - scanned);
    if (nl != nullptr) {
      size_t len = static_cast<const char*>(nl) - start;
      begin_ += len + 1;
      if (len > 0 && start[len - 1] == '\r') --len;
      *line = std::string_view(start, len);
      ++line_number_;
      return true;
    }
    scanned = end_ - begin_;
    if (!fill()) break;
  }
  if (!status_.ok() || begin_ == end_) return false;
  size_t len = end_ - begin_;
  const char* start = buf_.data() + begin_;
  begin_ = end_;
  if (start[len - 1] == '\r') --len;
  *line = std::string_view(start, len);
  ++line_number_;
  return true;
}

int64_t LineReader::skip(int64_t n) {
  int64_t skipped = 0;
  bool partial = false;  // bytes of a line not yet ended were dropped
  while (skipped < n) {
    const char* start = buf_.data() + begin_;
    const void* nl = std::memchr(start, '\n', end_ - begin_);
    if (nl != nullptr) {
      begin_ += static_cast<const char*>(nl) - start + 1;
      ++skipped;
      partial = false;
      continue;
    }
    partial = partial || end_ > begin_;
    begin_ = end_;
    if (!fill()) {
      if (partial && status_.ok()) ++skipped;  // the last line has no newline
      break;
    }
  }
  line_number_ += skipped;
  return skipped;
}

}  // namespace lizard
