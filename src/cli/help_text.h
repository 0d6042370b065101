// Help and usage text of the `lizard` command line: options shown by what
// their value is (N, SECONDS, DIR) with their defaults, rather than the
// parser's type and range text, and the nearest command named for a typo.
//
//   CLI::App app;
//   app.option_defaults()->always_capture_default();   // before adding options
//   ...add subcommands and options...
//   tidy_help(&app);                                    // after adding them
//   if (auto hint = unknown_command_hint(app, argc, argv)) std::cerr << *hint;
#pragma once

#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace lizard {

// For every option of `app` and its subcommands: the value's name without
// the checks' text ("N", not "INT:INT in [0 - 1099511627776]"), and its
// default at the end of its description unless the description already
// gives one.
void tidy_help(CLI::App* app);

// "lizard: unknown command 'stauts'; did you mean 'status'?\n" when the
// first argument is no option and no command of `app`; nullopt otherwise.
std::optional<std::string> unknown_command_hint(const CLI::App& app, int argc,
                                                const char* const* argv);

// The edit distance between two words (insertions, deletions, substitutions
// and swaps of neighbours).
size_t edit_distance(const std::string& a, const std::string& b);

}  // namespace lizard
