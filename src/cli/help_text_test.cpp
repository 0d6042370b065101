#include "cli/help_text.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

namespace lizard {
namespace {

TEST(HelpText, EditDistanceCountsSwapsAsOneEdit) {
  EXPECT_EQ(edit_distance("status", "status"), 0u);
  EXPECT_EQ(edit_distance("stauts", "status"), 1u);
  EXPECT_EQ(edit_distance("wrokers", "workers"), 1u);
  EXPECT_EQ(edit_distance("rn", "run"), 1u);
  EXPECT_EQ(edit_distance("", "run"), 3u);
}

class CommandHint : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"server", "client", "run", "runs", "status", "cancel", "workers"})
      app_.add_subcommand(name, "a command");
    app_.add_subcommand("executor-host", "")->group("");  // hidden, but known
  }
  std::optional<std::string> hint(std::vector<const char*> args) const {
    args.insert(args.begin(), "lizard");
    return unknown_command_hint(app_, static_cast<int>(args.size()), args.data());
  }
  CLI::App app_;
};

TEST_F(CommandHint, ATypoNamesTheNearestCommand) {
  EXPECT_EQ(hint({"stauts", "r1"}), "lizard: unknown command 'stauts'; did you mean 'status'?\n");
  EXPECT_EQ(hint({"wrokers"}), "lizard: unknown command 'wrokers'; did you mean 'workers'?\n");
  EXPECT_EQ(hint({"frobnicate"}),
            "lizard: unknown command 'frobnicate' (the commands: server, client, run, runs, "
            "status, cancel, workers)\n");
}

TEST_F(CommandHint, KnownCommandsAndOptionsGetNone) {
  EXPECT_EQ(hint({"status", "--bogus"}), std::nullopt);
  EXPECT_EQ(hint({"executor-host"}), std::nullopt);
  EXPECT_EQ(hint({"--verbose"}), std::nullopt);
  EXPECT_EQ(hint({}), std::nullopt);
}

TEST(HelpText, OptionsShowTheirValueByNameAndTheirDefault) {
  CLI::App app;
  app.option_defaults()->always_capture_default();
  CLI::App* sub = app.add_subcommand("server", "a server");
  int wait = 60, port = 5000, keep = 0;
  std::string dir = "/var/lib/x", empty;
  bool on = true;
  sub->add_option("--worker-wait", wait, "Seconds a run waits")
      ->type_name("SECONDS")
      ->check(CLI::Range(0, 3600));
  sub->add_option("-p,--port", port, "Port (default 5000)");
  sub->add_option("--keep", keep, "Keep N")->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  sub->add_option("--dir", dir, "Where");
  sub->add_option("--host", empty, "Host");
  sub->add_option("--on", on, "On or off")
      ->transform(
          CLI::CheckedTransformer(std::map<std::string, bool>{{"on", true}, {"off", false}}))
      ->type_name("on|off")
      ->default_str("on");
  tidy_help(&app);
  const std::string help = sub->help();
  EXPECT_EQ(help.find("INT"), std::string::npos) << help;
  EXPECT_EQ(help.find(" in ["), std::string::npos) << help;
  EXPECT_EQ(help.find("->"), std::string::npos) << help;
  EXPECT_NE(help.find("--worker-wait SECONDS"), std::string::npos) << help;
  EXPECT_NE(help.find("Seconds a run waits (default: 60)"), std::string::npos) << help;
  EXPECT_NE(help.find("Port (default 5000)"), std::string::npos) << help;  // not twice
  EXPECT_EQ(help.find("(default: 5000)"), std::string::npos) << help;
  EXPECT_NE(help.find("--keep N"), std::string::npos) << help;
  EXPECT_NE(help.find("Keep N (default: 0)"), std::string::npos) << help;
  EXPECT_NE(help.find("Where (default: /var/lib/x)"), std::string::npos) << help;
  EXPECT_NE(help.find("--host TEXT"), std::string::npos) << help;
  EXPECT_EQ(help.find("Host (default"), std::string::npos) << help;
  EXPECT_NE(help.find("--on on|off"), std::string::npos) << help;
  EXPECT_NE(help.find("On or off (default: on)"), std::string::npos) << help;
  // The checks still hold.
  EXPECT_NO_THROW(app.parse("server --worker-wait 5 --on off", false));
  EXPECT_EQ(wait, 5);
  EXPECT_FALSE(on);
  EXPECT_THROW(app.parse("server --worker-wait 9999", false), CLI::ValidationError);
}

}  // namespace
}  // namespace lizard
