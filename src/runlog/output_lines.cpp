#include "runlog/output_lines.h"

namespace lizard {
namespace {

// The length of the valid UTF-8 sequence of more than one byte that starts at
// `s[i]`, or 0 when there is none.
size_t utf8_sequence(std::string_view s, size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  size_t n = 0;
  unsigned char min_second = 0x80, max_second = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    if (b == 0xE0) min_second = 0xA0;  // no overlong forms
    if (b == 0xED) max_second = 0x9F;  // no surrogates
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    if (b == 0xF0) min_second = 0x90;
    if (b == 0xF4) max_second = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  const auto second = static_cast<unsigned char>(s[i + 1]);
  if (second < min_second || second > max_second) return 0;
  for (size_t k = 2; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  return n;
}

}  // namespace

std::string printable_text(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size();) {
    const auto b = static_cast<unsigned char>(raw[i]);
    if ((b >= 0x20 && b < 0x7F) || b == '\t') {
      out.push_back(static_cast<char>(b));
      ++i;
      continue;
    }
    const size_t n = b >= 0x80 ? utf8_sequence(raw, i) : 0;
    if (n == 0) {
      out.push_back('?');
      ++i;
      continue;
    }
    out.append(raw.substr(i, n));
    i += n;
  }
  return out;
}

void log_lines_of(std::string_view printed, const OutputLines::Emit& log) {
  OutputLines lines;
  size_t count = 0;
  auto limited = [&](std::string line) {
    if (++count <= kMaxLoggedLines) log(std::move(line));
  };
  lines.add(printed, limited);
  lines.finish(limited);
  if (count > kMaxLoggedLines)
    log("... and " + std::to_string(count - kMaxLoggedLines) + " more lines, not logged");
}

void OutputLines::add(std::string_view bytes, const Emit& emit) {
  size_t start = 0;
  while (start < bytes.size()) {
    const size_t nl = bytes.find('\n', start);
    const size_t end = nl == std::string_view::npos ? bytes.size() : nl;
    std::string_view piece = bytes.substr(start, end - start);
    pending_ = pending_ || !piece.empty();
    const size_t room = kMaxLineBytes - std::min(kMaxLineBytes, line_.size());
    if (piece.size() > room) {
      cut_ += piece.size() - room;
      piece = piece.substr(0, room);
    }
    line_.append(piece);
    if (nl == std::string_view::npos) return;
    pending_ = true;
    end_line(emit);
    start = nl + 1;
  }
}

void OutputLines::finish(const Emit& emit) {
  if (pending_) end_line(emit);
}

void OutputLines::end_line(const Emit& emit) {
  if (!line_.empty() && line_.back() == '\r') line_.pop_back();
  std::string text = printable_text(line_);
  if (cut_ > 0) text += " [" + std::to_string(cut_) + " more bytes of this line cut]";
  line_.clear();
  cut_ = 0;
  pending_ = false;
  emit(std::move(text));
}

}  // namespace lizard
