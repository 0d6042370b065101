#include "program/kernel_set.h"

#include <cctype>
#include <cstring>

namespace lizard {
namespace {

constexpr char kGlobal[] = "__global__";
constexpr char kDevice[] = "__device__";
static_assert(sizeof(kGlobal) == sizeof(kDevice), "the rewrite keeps every offset");

bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// A scanner over C++ source that steps over comments, literals and
// preprocessor lines, so that only code is looked at.
class Scanner {
 public:
  explicit Scanner(const std::string& s) : s_(s) {}

  size_t pos() const { return i_; }
  bool done() const { return i_ >= s_.size(); }
  char peek() const { return done() ? '\0' : s_[i_]; }

  // Steps over whitespace, comments and preprocessor lines.
  void skip_space() {
    while (!done()) {
      const char c = s_[i_];
      if (c == '\n') {
        line_start_ = true;
        ++i_;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++i_;
      } else if (s_.compare(i_, 2, "//") == 0) {
        skip_to_line_end(false);
      } else if (s_.compare(i_, 2, "/*") == 0) {
        const size_t end = s_.find("*/", i_ + 2);
        i_ = end == std::string::npos ? s_.size() : end + 2;
      } else if (c == '#' && line_start_) {
        skip_to_line_end(true);
      } else {
        return;
      }
    }
  }

  // The identifier at the cursor (and steps over it), or "" when the next
  // token is something else (which is then stepped over).
  std::string next_token() {
    skip_space();
    line_start_ = false;
    if (done()) return "";
    const char c = s_[i_];
    if (ident_char(c) && !std::isdigit(static_cast<unsigned char>(c))) {
      const size_t start = i_;
      while (!done() && ident_char(s_[i_])) ++i_;
      if (!done() && s_[i_] == '"' && raw_prefix(s_.substr(start, i_ - start))) {
        skip_raw_string();
        return "";
      }
      return s_.substr(start, i_ - start);
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {  // a number, digit separators too
      while (!done() && (ident_char(s_[i_]) || s_[i_] == '\'' || s_[i_] == '.')) ++i_;
    } else if (c == '"' || c == '\'') {
      skip_quoted(c);
    } else {
      ++i_;
    }
    return "";
  }

  // Steps over a balanced (...) group starting at the cursor.
  void skip_group() {
    int depth = 0;
    do {
      skip_space();
      if (done()) return;
      const char c = peek();
      if (c == '(') ++depth;
      if (c == ')') --depth;
      next_token();
    } while (depth > 0);
  }

 private:
  static bool raw_prefix(const std::string& p) {
    return p == "R" || p == "u8R" || p == "uR" || p == "UR" || p == "LR";
  }
  void skip_to_line_end(bool continued) {
    while (!done() && s_[i_] != '\n') {
      if (continued && s_[i_] == '\\' && i_ + 1 < s_.size() && s_[i_ + 1] == '\n') ++i_;
      ++i_;
    }
  }
  void skip_quoted(char quote) {
    ++i_;
    while (!done() && s_[i_] != quote && s_[i_] != '\n') i_ += s_[i_] == '\\' ? 2 : 1;
    if (!done()) ++i_;
  }
  void skip_raw_string() {  // at the opening quote of R"delim( ... )delim"
    const size_t open = s_.find('(', i_);
    if (open == std::string::npos) {
      i_ = s_.size();
      return;
    }
    const std::string close = ")" + s_.substr(i_ + 1, open - i_ - 1) + "\"";
    const size_t end = s_.find(close, open);
    i_ = end == std::string::npos ? s_.size() : end + close.size();
  }

  const std::string& s_;
  size_t i_ = 0;
  bool line_start_ = true;
};

// After a `__global__`, the name of the function it declares: the first
// identifier followed by `(` that is not an attribute-like keyword
// (__launch_bounds__(...), __attribute__((...)), alignas(...)); "" when a
// ';', '{' or '}' comes first.
std::string declared_name(Scanner& in) {
  while (true) {
    in.skip_space();
    if (in.done()) return "";
    const char c = in.peek();
    if (c == ';' || c == '{' || c == '}' || c == '=') return "";
    const std::string word = in.next_token();
    if (word.empty()) continue;
    in.skip_space();
    if (in.peek() != '(') continue;
    if (word.rfind("__", 0) == 0 || word == "alignas" || word == "decltype") {
      in.skip_group();
      continue;
    }
    return word;
  }
}

}  // namespace

std::set<std::string> global_functions(const std::string& source) {
  std::set<std::string> names;
  Scanner in(source);
  while (!in.done()) {
    if (in.next_token() != kGlobal) continue;
    Scanner ahead = in;
    if (std::string name = declared_name(ahead); !name.empty()) names.insert(name);
  }
  return names;
}

std::string missing_kernel_note(const Manifest& m, const std::string& source) {
  const std::set<std::string> defined = global_functions(source);
  for (const auto* steps : {&m.iterate, &m.generate})
    for (const KernelStep& step : *steps) {
      if (defined.count(step.kernel)) continue;
      std::string list;
      for (const std::string& d : defined) list += (list.empty() ? "" : ", ") + d;
      return "kernel '" + step.kernel + "' named in " +
             (steps == &m.iterate ? "iterate" : "generate") + " is not a __global__ function of " +
             m.cuda_source + " (" + (list.empty() ? "it has none" : "its kernels: " + list) +
             "); a kernel lizard launches is declared extern \"C\" __global__";
    }
  return "";
}

std::string demote_kernels(const std::string& source, const std::set<std::string>& names) {
  std::string out = source;
  if (names.empty()) return out;
  Scanner in(source);
  while (!in.done()) {
    in.skip_space();
    const size_t at = in.pos();
    if (in.next_token() != kGlobal) continue;
    Scanner ahead = in;
    if (names.count(declared_name(ahead))) out.replace(at, std::strlen(kGlobal), kDevice);
  }
  return out;
}

}  // namespace lizard
