#include "server/dashboard.h"

#include <cctype>
#include <cstdlib>
#include <vector>

namespace lizard {

// Defined in the file that cmake/LizardEmbed.cmake generates from server/dashboard/.
std::string_view dashboard_file(std::string_view name);

std::optional<DashboardFile> dashboard_file_named(std::string_view name) {
  struct Known {
    std::string_view name;
    const char* type;
  };
  static const Known kKnown[] = {{"index.html", "text/html; charset=utf-8"},
                                 {"format.js", "text/javascript; charset=utf-8"},
                                 {"app.js", "text/javascript; charset=utf-8"},
                                 {"style.css", "text/css; charset=utf-8"}};
  for (const auto& k : kKnown)
    if (k.name == name) return DashboardFile{k.type, dashboard_file(name)};
  return std::nullopt;
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

struct MediaRange {
  std::string_view type, subtype;
  double q = 1;
};

std::vector<MediaRange> parse_accept(std::string_view accept) {
  std::vector<MediaRange> out;
  while (!accept.empty()) {
    const size_t comma = accept.find(',');
    std::string_view item = accept.substr(0, comma);
    accept = comma == std::string_view::npos ? std::string_view() : accept.substr(comma + 1);
    std::string_view media = trim(item.substr(0, item.find(';')));
    const size_t slash = media.find('/');
    if (slash == std::string_view::npos) continue;
    MediaRange r{trim(media.substr(0, slash)), trim(media.substr(slash + 1)), 1};
    for (size_t p = item.find(';'); p != std::string_view::npos; p = item.find(';', p + 1)) {
      std::string_view param = trim(item.substr(p + 1, item.find(';', p + 1) - p - 1));
      if (param.size() > 2 && (param[0] == 'q' || param[0] == 'Q') && param[1] == '=')
        r.q = std::strtod(std::string(param.substr(2)).c_str(), nullptr);
    }
    out.push_back(r);
  }
  return out;
}

// The q value the Accept ranges give type/subtype: from the most specific
// range that matches it, 0 when none does.
double quality(const std::vector<MediaRange>& ranges, std::string_view type,
               std::string_view subtype) {
  int best = -1;
  double q = 0;
  for (const auto& r : ranges) {
    int specificity = -1;
    if (iequals(r.type, type) && iequals(r.subtype, subtype))
      specificity = 2;
    else if (iequals(r.type, type) && r.subtype == "*")
      specificity = 1;
    else if (r.type == "*" && r.subtype == "*")
      specificity = 0;
    if (specificity > best) {
      best = specificity;
      q = r.q;
    }
  }
  return q;
}

}  // namespace

bool prefers_html(std::string_view accept) {
  const auto ranges = parse_accept(accept);
  const double html = quality(ranges, "text", "html");
  return html > 0 && html > quality(ranges, "application", "json");
}

}  // namespace lizard
