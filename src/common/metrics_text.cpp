#include "common/metrics_text.h"

#include <cmath>
#include <cstdlib>
#include <set>

namespace lizard {

namespace {

bool name_start(char c, bool colon) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
}
bool name_char(char c, bool colon) {
  return name_start(c, colon) || (c >= '0' && c <= '9');
}

// Reads one line of the exposition; each method consumes what it read.
class LineReader {
 public:
  explicit LineReader(std::string_view s) : s_(s) {}
  bool done() const { return i_ >= s_.size(); }
  char peek() const { return done() ? '\0' : s_[i_]; }
  bool eat(char c) {
    if (peek() != c) return false;
    ++i_;
    return true;
  }
  void skip_blanks() {
    while (peek() == ' ' || peek() == '\t') ++i_;
  }
  // A metric name (colons allowed) or a label name (not); empty when none.
  std::string name(bool colon) {
    const size_t start = i_;
    if (!name_start(peek(), colon)) return "";
    while (name_char(peek(), colon)) ++i_;
    return std::string(s_.substr(start, i_ - start));
  }
  std::string_view token() {
    const size_t start = i_;
    while (!done() && peek() != ' ' && peek() != '\t') ++i_;
    return s_.substr(start, i_ - start);
  }
  std::string_view rest() {
    std::string_view r = s_.substr(std::min(i_, s_.size()));
    i_ = s_.size();
    return r;
  }
  Result<std::string> quoted();

 private:
  std::string_view s_;
  size_t i_ = 0;
};

Result<std::string> LineReader::quoted() {
  if (!eat('"')) return invalid_argument("a label value must be in double quotes");
  std::string out;
  while (!done()) {
    char c = s_[i_++];
    if (c == '"') return out;
    if (c != '\\') {
      out += c;
      continue;
    }
    char e = done() ? '\0' : s_[i_++];
    if (e == '\\' || e == '"')
      out += e;
    else if (e == 'n')
      out += '\n';
    else
      return invalid_argument(std::string("unknown escape \\") + e + " in a label value");
  }
  return invalid_argument("a label value is not closed");
}

Result<double> parse_number(std::string_view t) {
  if (t.empty()) return invalid_argument("a sample has no value");
  const std::string s(t);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return invalid_argument("'" + s + "' is not a number");
  return v;
}

Result<std::map<std::string, std::string>> parse_labels(LineReader* r) {
  std::map<std::string, std::string> labels;
  if (!r->eat('{')) return labels;
  while (!r->eat('}')) {
    r->skip_blanks();
    std::string name = r->name(false);
    if (name.empty()) return invalid_argument("a label name is missing or malformed");
    r->skip_blanks();
    if (!r->eat('=')) return invalid_argument("label " + name + " has no '='");
    r->skip_blanks();
    auto value = r->quoted();
    if (!value.ok()) return value.status();
    if (!labels.emplace(name, std::move(value).value()).second)
      return invalid_argument("label " + name + " is given twice");
    r->skip_blanks();
    if (!r->eat(',') && r->peek() != '}')
      return invalid_argument("labels must be separated by ',' and closed by '}'");
  }
  return labels;
}

Result<MetricSample> parse_sample(std::string_view line) {
  LineReader r(line);
  MetricSample s;
  s.name = r.name(true);
  if (s.name.empty()) return invalid_argument("a sample line must start with a metric name");
  LIZARD_ASSIGN_OR_RETURN(s.labels, parse_labels(&r));
  r.skip_blanks();
  LIZARD_ASSIGN_OR_RETURN(s.value, parse_number(r.token()));
  r.skip_blanks();
  std::string_view ts = r.token();
  if (!ts.empty()) {
    const std::string t(ts);
    char* end = nullptr;
    (void)std::strtoll(t.c_str(), &end, 10);
    if (end != t.c_str() + t.size()) return invalid_argument("'" + t + "' is not a timestamp");
  }
  r.skip_blanks();
  if (!r.done()) return invalid_argument("unexpected text after the value");
  return s;
}

// The state of one parse: which family is open and which are closed.
class Parser {
 public:
  Status line(std::string_view line);
  Status finish();
  ParsedMetrics out;

 private:
  Status comment(std::string_view line);
  Status declare(const std::string& kind, const std::string& name, std::string_view rest);
  std::string family_of(const std::string& sample_name) const;
  Status enter(const std::string& family);
  Status check_histogram(const std::string& family) const;

  std::string open_;              // family whose samples come now
  std::set<std::string> closed_;  // families whose samples are over
  std::set<std::string> typed_, helped_, sampled_;
  std::set<std::pair<std::string, std::map<std::string, std::string>>> seen_;
};

Status Parser::line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  size_t first = line.find_first_not_of(" \t");
  if (first == std::string_view::npos) return Status::Ok();
  line.remove_prefix(first);
  if (line.front() == '#') return comment(line);
  LIZARD_ASSIGN_OR_RETURN(MetricSample s, parse_sample(line));
  const std::string family = family_of(s.name);
  LIZARD_RETURN_IF_ERROR(enter(family));
  if (!seen_.emplace(s.name, s.labels).second)
    return invalid_argument("sample " + s.name + " is given twice with the same labels");
  const std::string& type = out.families[family].type;
  if (type == "counter" && !(s.value >= 0))
    return invalid_argument("counter " + s.name + " is negative or NaN");
  sampled_.insert(family);
  out.samples.push_back(std::move(s));
  return Status::Ok();
}

Status Parser::comment(std::string_view line) {
  LineReader r(line.substr(1));
  r.skip_blanks();
  const std::string kind(r.token());
  if (kind != "HELP" && kind != "TYPE") return Status::Ok();  // a plain comment
  r.skip_blanks();
  const std::string name = r.name(true);
  if (name.empty()) return invalid_argument(kind + " needs a metric name");
  if (r.peek() != ' ' && r.peek() != '\t' && !r.done())
    return invalid_argument("malformed metric name after " + kind);
  r.skip_blanks();
  return declare(kind, name, r.rest());
}

Status Parser::declare(const std::string& kind, const std::string& name, std::string_view rest) {
  if (sampled_.count(name))
    return invalid_argument(kind + " for " + name + " comes after its samples");
  if (kind == "HELP") {
    if (!helped_.insert(name).second) return invalid_argument("a second HELP for " + name);
    std::string help;
    for (size_t i = 0; i < rest.size(); ++i) {
      if (rest[i] == '\\' && i + 1 < rest.size() && (rest[i + 1] == '\\' || rest[i + 1] == 'n')) {
        help += rest[i + 1] == 'n' ? '\n' : '\\';
        ++i;
      } else {
        help += rest[i];
      }
    }
    out.families[name].help = help;
    return Status::Ok();
  }
  if (!typed_.insert(name).second) return invalid_argument("a second TYPE for " + name);
  std::string type(rest);
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.pop_back();
  static const std::set<std::string> kTypes = {"counter", "gauge", "histogram", "summary",
                                               "untyped"};
  if (!kTypes.count(type)) return invalid_argument("unknown TYPE '" + type + "' for " + name);
  out.families[name].type = type;
  return Status::Ok();
}

// A histogram's x_bucket, x_sum and x_count belong to family x.
std::string Parser::family_of(const std::string& sample_name) const {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string sfx(suffix);
    if (sample_name.size() <= sfx.size() ||
        sample_name.compare(sample_name.size() - sfx.size(), sfx.size(), sfx) != 0)
      continue;
    const std::string base = sample_name.substr(0, sample_name.size() - sfx.size());
    auto it = out.families.find(base);
    if (it != out.families.end() &&
        (it->second.type == "histogram" || (it->second.type == "summary" && sfx != "_bucket")))
      return base;
  }
  return sample_name;
}

Status Parser::enter(const std::string& family) {
  if (family == open_) return Status::Ok();
  if (closed_.count(family))
    return invalid_argument("samples of " + family + " are not kept together");
  if (!open_.empty()) closed_.insert(open_);
  open_ = family;
  out.families[family];  // untyped unless declared
  return Status::Ok();
}

Status Parser::check_histogram(const std::string& family) const {
  // Per label set (le aside): bounds with their counts, and _count.
  std::map<std::map<std::string, std::string>, std::map<double, double>> buckets;
  std::map<std::map<std::string, std::string>, double> counts;
  for (const auto& s : out.samples) {
    auto labels = s.labels;
    if (s.name == family + "_bucket") {
      auto le = labels.find("le");
      if (le == labels.end()) return invalid_argument(s.name + " has no le label");
      LIZARD_ASSIGN_OR_RETURN(double bound, parse_number(le->second));
      labels.erase(le);
      buckets[labels][bound] = s.value;
    } else if (s.name == family + "_count") {
      counts[labels] = s.value;
    }
  }
  for (const auto& [labels, by_bound] : buckets) {
    double prev = 0;
    for (const auto& [bound, n] : by_bound) {
      if (n < prev) return invalid_argument(family + " buckets are not cumulative");
      prev = n;
    }
    if (!std::isinf(by_bound.rbegin()->first))
      return invalid_argument(family + " has no le=\"+Inf\" bucket");
    auto c = counts.find(labels);
    if (c == counts.end() || c->second != prev)
      return invalid_argument(family + "_count differs from its +Inf bucket");
  }
  return Status::Ok();
}

Status Parser::finish() {
  for (const auto& [name, f] : out.families)
    if (f.type == "histogram") LIZARD_RETURN_IF_ERROR(check_histogram(name));
  return Status::Ok();
}

bool has_labels(const MetricSample& s, const std::string& name,
                const std::map<std::string, std::string>& labels) {
  if (s.name != name) return false;
  for (const auto& [k, v] : labels) {
    auto it = s.labels.find(k);
    if (it == s.labels.end() || it->second != v) return false;
  }
  return true;
}

}  // namespace

std::optional<double> ParsedMetrics::value(const std::string& name,
                                           const std::map<std::string, std::string>& labels) const {
  for (const auto& s : samples)
    if (has_labels(s, name, labels)) return s.value;
  return std::nullopt;
}

double ParsedMetrics::sum(const std::string& name,
                          const std::map<std::string, std::string>& labels) const {
  double total = 0;
  for (const auto& s : samples)
    if (has_labels(s, name, labels)) total += s.value;
  return total;
}

size_t ParsedMetrics::count(const std::string& name,
                            const std::map<std::string, std::string>& labels) const {
  size_t n = 0;
  for (const auto& s : samples) n += has_labels(s, name, labels);
  return n;
}

Result<ParsedMetrics> parse_metrics_text(std::string_view text) {
  Parser p;
  size_t start = 0, number = 1;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    Status st = p.line(text.substr(start, end - start));
    if (!st.ok()) return st.with_context("line " + std::to_string(number));
    start = end + 1;
    ++number;
  }
  LIZARD_RETURN_IF_ERROR(p.finish());
  return std::move(p.out);
}

}  // namespace lizard
