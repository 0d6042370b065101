#include "program/include_check.h"

#include <cctype>
#include <set>
#include <string_view>
#include <vector>

namespace lizard {
namespace {

// The text after translation phase 2 (backslash-newline removed), with the
// physical line each of its characters came from.
struct Spliced {
  std::string text;
  std::vector<int> line;  // 1-based, one per character of text
};

Spliced splice_lines(const std::string& source) {
  Spliced s;
  s.text.reserve(source.size());
  s.line.reserve(source.size());
  int line = 1;
  for (size_t i = 0; i < source.size(); ++i) {
    const char c = source[i];
    if (c == '\\') {  // a backslash, maybe spaces, then the end of the line
      size_t j = i + 1;
      while (j < source.size() && (source[j] == ' ' || source[j] == '\t' || source[j] == '\r')) ++j;
      if (j < source.size() && source[j] == '\n') {
        ++line;
        i = j;
        continue;
      }
    }
    s.text.push_back(c);
    s.line.push_back(line);
    if (c == '\n') ++line;
  }
  return s;
}

bool is_ident(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// The end (one past the closing quote) of the raw string literal whose `"`
// is at `quote`, or npos when it does not close.
size_t raw_string_end(const std::string& t, size_t quote) {
  const size_t open = t.find('(', quote + 1);
  if (open == std::string::npos || open - quote - 1 > 16) return std::string::npos;
  const std::string close = ")" + t.substr(quote + 1, open - quote - 1) + "\"";
  const size_t end = t.find(close, open + 1);
  return end == std::string::npos ? std::string::npos : end + close.size();
}

// Whether the `"` at `quote` opens a raw string literal (R, u8R, LR, uR, UR).
bool opens_raw_string(const std::string& t, size_t quote) {
  if (quote == 0 || t[quote - 1] != 'R') return false;
  size_t start = quote - 1;
  while (start > 0 && is_ident(t[start - 1])) --start;
  const std::string_view prefix(t.data() + start, quote - start);
  return prefix == "R" || prefix == "u8R" || prefix == "LR" || prefix == "uR" || prefix == "UR";
}

// `t` with comments blanked (newlines kept) and each string and character
// literal kept as it is, so that directives and their operands stay readable
// and no comment marker inside a literal counts.  An unclosed literal ends
// with its line, as the compiler's does.
std::string blank_comments(const std::string& t) {
  std::string out = t;
  size_t i = 0;
  while (i < t.size()) {
    if (t.compare(i, 2, "//") == 0) {
      while (i < t.size() && t[i] != '\n') out[i++] = ' ';
    } else if (t.compare(i, 2, "/*") == 0) {
      const size_t end = t.find("*/", i + 2);
      const size_t stop = end == std::string::npos ? t.size() : end + 2;
      for (; i < stop; ++i)
        if (t[i] != '\n') out[i] = ' ';
    } else if (t[i] == '"' && opens_raw_string(t, i)) {
      const size_t end = raw_string_end(t, i);
      i = end == std::string::npos ? t.size() : end;
    } else if (t[i] == '"' || t[i] == '\'') {
      const char quote = t[i++];
      while (i < t.size() && t[i] != quote && t[i] != '\n') i += t[i] == '\\' ? 2 : 1;
      if (i < t.size() && t[i] == quote) ++i;
    } else {
      ++i;
    }
  }
  return out;
}

void skip_blanks(const std::string& t, size_t* i) {
  while (*i < t.size() &&
         (t[*i] == ' ' || t[*i] == '\t' || t[*i] == '\r' || t[*i] == '\f' || t[*i] == '\v'))
    ++*i;
}

// The header name at `i` ("name" or <name>), its delimiters included; empty
// when there is none (a macro, or no closing delimiter on the line).
std::string header_name_at(const std::string& t, size_t i) {
  if (i >= t.size() || (t[i] != '"' && t[i] != '<')) return "";
  const char close = t[i] == '"' ? '"' : '>';
  const size_t end = t.find_first_of(std::string(1, close) + "\n", i + 1);
  if (end == std::string::npos || t[end] != close) return "";
  return t.substr(i, end - i + 1);
}

// Why the path inside `spelt` ("name" or <name>) may not be read; "" if it may.
std::string why_refused(const std::string& spelt) {
  const std::string path = spelt.substr(1, spelt.size() - 2);
  if (path.empty()) return "it names no file";
  if (path[0] == '/') return "an absolute path names a file outside the program";
  if (path.find('\\') != std::string::npos) return "a backslash is not allowed in a file name";
  size_t start = 0;
  while (start <= path.size()) {
    const size_t slash = std::min(path.find('/', start), path.size());
    if (path.compare(start, slash - start, "..") == 0 && slash - start == 2)
      return "\"..\" leads outside the program's directory";
    start = slash + 1;
  }
  return "";
}

Status refuse(const std::string& file, int line, const std::string& what, const std::string& why) {
  return compile_error(file + ":" + std::to_string(line) + ": " + what + " is not allowed: " + why +
                       "; a program may include only its own files (relative names without "
                       "\"..\") and the system, CUDA and lizard headers");
}

// The directive that names a file at the start of the logical line at `i`
// (after its `#`), checked.
Status check_directive(const std::string& file, const Spliced& s, const std::string& t, size_t i) {
  const size_t hash_at = i;
  skip_blanks(t, &i);
  if (i < t.size() && t[i] == '#') {
    ++i;
  } else if (t.compare(i, 2, "%:") == 0) {
    i += 2;
  } else {
    return Status::Ok();
  }
  skip_blanks(t, &i);
  size_t end = i;
  while (end < t.size() && is_ident(t[end])) ++end;
  const std::string directive = t.substr(i, end - i);
  static const std::set<std::string> kNamesFile = {"include", "include_next", "import", "embed"};
  std::string what = "#" + directive;
  i = end;
  skip_blanks(t, &i);
  if (directive == "pragma") {  // #pragma GCC dependency "file"
    size_t j = i;
    for (const char* word : {"GCC", "dependency"}) {
      if (t.compare(j, std::string_view(word).size(), word) != 0) return Status::Ok();
      j += std::string_view(word).size();
      skip_blanks(t, &j);
    }
    what = "#pragma GCC dependency";
    i = j;
  } else if (!kNamesFile.count(directive)) {
    return Status::Ok();
  }
  const int line = s.line[hash_at < s.line.size() ? hash_at : s.line.size() - 1];
  const std::string name = header_name_at(t, i);
  if (name.empty())
    return refuse(file, line, what + " of a name made by a macro",
                  "name the file in quotes or angle brackets");
  const std::string why = why_refused(name);
  if (!why.empty()) return refuse(file, line, what + " " + name, why);
  return Status::Ok();
}

// Each __has_include(...) and __has_include_next(...) of `t`, checked.
Status check_has_include(const std::string& file, const Spliced& s, const std::string& t) {
  for (size_t at = t.find("__has_include"); at != std::string::npos;
       at = t.find("__has_include", at + 1)) {
    if (at > 0 && is_ident(t[at - 1])) continue;
    size_t i = at + std::string_view("__has_include").size();
    if (t.compare(i, 5, "_next") == 0) i += 5;
    if (i < t.size() && is_ident(t[i])) continue;
    skip_blanks(t, &i);
    if (i >= t.size() || t[i] != '(') continue;  // the name alone, e.g. #ifdef __has_include
    ++i;
    skip_blanks(t, &i);
    const std::string name = header_name_at(t, i);
    if (name.empty())
      return refuse(file, s.line[at], "__has_include of a name made by a macro",
                    "name the file in quotes or angle brackets");
    const std::string why = why_refused(name);
    if (!why.empty()) return refuse(file, s.line[at], "__has_include(" + name + ")", why);
  }
  return Status::Ok();
}

}  // namespace

Status check_includes_of(const std::string& name, const std::string& text) {
  const Spliced s = splice_lines(text);
  if (s.text.empty()) return Status::Ok();
  const std::string t = blank_comments(s.text);
  for (size_t start = 0; start < t.size();) {
    LIZARD_RETURN_IF_ERROR(check_directive(name, s, t, start));
    const size_t nl = t.find('\n', start);
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return check_has_include(name, s, t);
}

Status check_includes(const std::map<std::string, std::string>& sources) {
  for (const auto& [name, text] : sources) LIZARD_RETURN_IF_ERROR(check_includes_of(name, text));
  return Status::Ok();
}

}  // namespace lizard
