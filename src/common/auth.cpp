#include "common/auth.h"

#include <cctype>
#include <cstdlib>

namespace lizard {

bool constant_time_equals(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = a.size() > b.size() ? a.size() : b.size();
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

std::string bearer_token(std::string_view v) {
  constexpr std::string_view kScheme = "Bearer ";
  if (v.size() <= kScheme.size()) return "";
  for (size_t i = 0; i < kScheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(v[i])) !=
        std::tolower(static_cast<unsigned char>(kScheme[i])))
      return "";
  v.remove_prefix(kScheme.size());
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\r')) v.remove_suffix(1);
  return std::string(v);
}

std::string token_from(const std::string& flag, const char* env) {
  if (!flag.empty()) return flag;
  const char* e = std::getenv(env);
  return e ? e : "";
}

}  // namespace lizard
