#include "common/json_limits.h"

#include <set>
#include <vector>

namespace lizard {

namespace {

using nlohmann::json;

// Builds the document with nlohmann's own DOM builder, and stops the parse
// at the first object or array past the depth bound or the first key an
// object already has.
class BoundedSax {
 public:
  BoundedSax(json* out, int max_depth) : dom_(*out, false), max_depth_(max_depth) {}

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const json::string_t& s) {
    return dom_.number_float(v, s);
  }
  bool string(json::string_t& v) { return dom_.string(v); }
  bool binary(json::binary_t& v) { return dom_.binary(v); }
  bool start_object(std::size_t n) {
    if (!open()) return false;
    keys_.emplace_back();
    return dom_.start_object(n);
  }
  bool key(json::string_t& k) {
    if (!keys_.back().insert(k).second) {
      error_ = "duplicate key '" + k + "'";
      return false;
    }
    return dom_.key(k);
  }
  bool end_object() {
    keys_.pop_back();
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) { return open() && dom_.start_array(n); }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  bool parse_error(std::size_t at, const std::string& token, const nlohmann::detail::exception& e) {
    syntax_error_ = true;
    return dom_.parse_error(at, token, e);
  }

  // Why the parse stopped early ("" when it did not, or for bad syntax).
  const std::string& error() const { return error_; }
  bool syntax_error() const { return syntax_error_; }

 private:
  bool open() {
    if (++depth_ <= max_depth_) return true;
    error_ = "nests arrays or objects more than " + std::to_string(max_depth_) + " levels deep";
    return false;
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  int max_depth_;
  int depth_ = 0;
  std::vector<std::set<std::string>> keys_;  // of each object open, innermost last
  std::string error_;
  bool syntax_error_ = false;
};

}  // namespace

int json_nesting_depth(std::string_view text, int stop_after) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > deepest) deepest = depth;
        if (deepest > stop_after) return deepest;
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return deepest;
}

Result<nlohmann::json> parse_json_bounded(std::string_view text, const std::string& what,
                                          int max_depth) {
  if (json_nesting_depth(text, max_depth) > max_depth)
    return invalid_argument(what + " nests arrays or objects more than " +
                            std::to_string(max_depth) + " levels deep");
  json j;
  BoundedSax sax(&j, max_depth);
  const bool ok = json::sax_parse(text.begin(), text.end(), &sax, json::input_format_t::json,
                                  /*strict=*/true, /*ignore_comments=*/false);
  if (!sax.error().empty()) return invalid_argument(what + ": " + sax.error());
  if (!ok || sax.syntax_error()) return invalid_argument(what + " is not valid JSON");
  return j;
}

}  // namespace lizard
