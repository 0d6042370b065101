#include "common/auth.h"

#include <sys/prctl.h>
#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

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

Result<std::string> token_from_file(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return invalid_argument("token file " + path + " is not a file this user can read");
  if (st.st_mode & (S_IRWXG | S_IRWXO)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return invalid_argument("token file " + path + " is open to other users (mode " + mode +
                            "): chmod 600 " + path);
  }
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) return invalid_argument("token file " + path + " cannot be read");
  std::string token = text.str();
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  if (token.empty()) return invalid_argument("token file " + path + " is empty");
  return token;
}

Result<std::string> daemon_token(const std::string& flag, const std::string& file, const char* env,
                                 const std::string& flag_name) {
  if (file.empty()) return token_from(flag, env);
  if (!flag.empty())
    return invalid_argument("give " + flag_name + " or " + flag_name + "-file, not both");
  return token_from_file(file);
}

Status guard_daemon_process() {
  unsetenv("LIZARD_TOKEN");
  unsetenv("LIZARD_READ_TOKEN");
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
    return internal_error(std::string("this daemon stays dumpable: ") + std::strerror(errno));
  return Status::Ok();
}

}  // namespace lizard
