// UserCommands: the `lizard` subcommands for people who run programs on a
// cluster, beside the daemons (`server`, `client`):
//
//   lizard run PROGRAM [--param k=4] [--dataset points=FILE] [--state NAME=VALUES]
//                      [--out DIR] [--detach] ...        submit a run and follow it
//   lizard runs [--status S]                             list runs
//   lizard status ID [--wait] [--out DIR]                one run
//   lizard cancel ID...                                  cancel runs
//   lizard logs ID [--worker W] [-f]                     what a run printed
//   lizard workers                                       workers, GPUs, programs built
//   lizard datasets [rm ID|PATH]                         uploads and kept rows; remove them
//   lizard stage FILE [--executors N]                    load a file's rows before any run
//
// Each takes -a/--address (default $LIZARD_ADDRESS, else 127.0.0.1),
// -p/--port (5000) and --token (default $LIZARD_TOKEN), and --json where it
// prints something.
//
//   CLI::App app;
//   UserCommands user(&app);
//   CLI11_PARSE(app, argc, argv);
//   if (auto status = user.run()) return *status;
#pragma once

#include <memory>
#include <optional>

namespace CLI {
class App;
}

namespace lizard {

class UserCommands {
 public:
  explicit UserCommands(CLI::App* app);
  ~UserCommands();
  // Runs the subcommand that was given and returns the exit status; nullopt
  // when the command line named none of these.
  std::optional<int> run() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lizard
