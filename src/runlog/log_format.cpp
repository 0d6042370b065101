#include "runlog/log_format.h"

namespace lizard {

std::string log_line(std::string_view source, int64_t executor, int64_t iteration,
                     std::string_view text) {
  std::string out = "[";
  out.append(source);
  if (source != kServerLogSource) out += executor < 0 ? " hook" : " e" + std::to_string(executor);
  if (iteration >= 0) out += " it " + std::to_string(iteration);
  out += "] ";
  out.append(text);
  return out;
}

std::string log_note(std::string_view source, std::string_view text) {
  std::string out = "[";
  out.append(source);
  out += "] ";
  out.append(text);
  return out;
}

bool log_line_from(std::string_view line, std::string_view source) {
  if (line.size() < source.size() + 2 || line[0] != '[') return false;
  if (line.substr(1, source.size()) != source) return false;
  const char after = line[source.size() + 1];
  return after == ' ' || after == ']';
}

bool valid_log_source(std::string_view source) {
  if (source.empty() || source.size() > 64) return false;
  for (char c : source) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

}  // namespace lizard
