#include "cli/help_text.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <vector>

namespace lizard {

namespace {

// The parser's name for a value type, as help shows it.
std::string value_name(const std::string& type) {
  if (type == "INT" || type == "UINT") return "N";
  if (type == "FLOAT") return "NUMBER";
  if (type == "BOOLEAN") return "on|off";
  return type;
}

// What CLI11 prints after the option's names, with the value's plain name.
std::string option_text(const CLI::Option& opt) {
  std::string type = opt.get_type_name();
  type = value_name(type.substr(0, type.find(':')));
  std::string out = type;  // CLI11 puts a space before it
  if (opt.get_expected_max() == CLI::detail::expected_max_vector_size) out += " ...";
  if (opt.get_required()) out += " REQUIRED";
  if (!opt.get_envname().empty())
    out += (out.empty() ? "(Env:" : " (Env:") + opt.get_envname() + ")";
  if (!opt.get_needs().empty()) {
    out += " Needs:";
    for (const CLI::Option* o : opt.get_needs()) out += " " + o->get_name();
  }
  return out;
}

bool shows_default(const std::string& text) {
  return !text.empty() && text != "[]" && text != "\"\"";
}

}  // namespace

void tidy_help(CLI::App* app) {
  for (CLI::Option* opt : app->get_options()) {
    if (opt->get_type_size() == 0 || !opt->get_option_text().empty()) continue;  // flags
    const std::string default_text = opt->get_default_str();
    opt->option_text(option_text(*opt));
    std::string description = opt->get_description();
    if (shows_default(default_text) && description.find("default") == std::string::npos)
      opt->description(description + " (default: " + default_text + ")");
  }
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) tidy_help(sub);
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::optional<std::string> unknown_command_hint(const CLI::App& app, int argc,
                                                const char* const* argv) {
  if (argc < 2 || argv[1][0] == '-') return std::nullopt;
  const std::string word = argv[1];
  std::vector<std::string> names;  // those help lists
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == word) return std::nullopt;
    if (!sub->get_group().empty()) names.push_back(sub->get_name());
  }
  std::string best;
  size_t best_distance = 3;  // at most two edits away
  for (const auto& n : names)
    if (size_t d = edit_distance(word, n); d < best_distance) best = n, best_distance = d;
  std::string out = "lizard: unknown command '" + word + "'";
  if (!best.empty()) return out + "; did you mean '" + best + "'?\n";
  std::string all;
  for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
  return out + " (the commands: " + all + ")\n";
}

}  // namespace lizard
