#include "runlog/output_bound.h"

#include <cstdio>

namespace lizard {

bool OutputBound::admit(uint64_t bytes) {
  if (!full_ && kept_ + bytes <= limit_) {
    kept_ += bytes;
    return true;
  }
  full_ = true;
  add_cut(1, bytes);
  return false;
}

void OutputBound::add_cut(uint64_t lines, uint64_t bytes) {
  cut_lines_ += lines;
  cut_bytes_ += bytes;
}

std::string OutputBound::cut_notice(const std::string& per_what) const {
  return "output cut: " + std::to_string(cut_lines_) + " more line" + (cut_lines_ == 1 ? "" : "s") +
         " (" + byte_size_text(cut_bytes_) + ") past the " + byte_size_text(limit_) + " kept " +
         per_what;
}

std::string byte_size_text(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (v >= 1024 && unit + 1 < sizeof kUnits / sizeof kUnits[0]) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf,
                v == static_cast<double>(static_cast<uint64_t>(v)) ? "%.0f %s" : "%.1f %s", v,
                kUnits[unit]);
  return buf;
}

}  // namespace lizard
