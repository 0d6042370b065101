// UsersCommand: `lizard users`, run on the head node to manage the server's
// users file (--users):
//
//   lizard users add NAME --users FILE [--role user|admin|reader]
//                         [--max-executors N] [--max-waiting N]
//       adds NAME with a new token, printed once (the file keeps only its
//       SHA-256); the server reads the file again within a second
//   lizard users list --users FILE      names, roles and quotas
//
//   UsersCommand users(&app);
//   CLI11_PARSE(app, argc, argv);
//   if (auto status = users.run()) return *status;
#pragma once

#include <optional>
#include <string>

#include "users/user_directory.h"

namespace CLI {
class App;
}

namespace lizard {

class UsersCommand {
 public:
  explicit UsersCommand(CLI::App* app);
  // The exit status of the subcommand given; nullopt when it was not this one.
  std::optional<int> run() const;

 private:
  CLI::App* add_ = nullptr;
  CLI::App* list_ = nullptr;
  std::string file_;
  std::string role_ = "user";
  User user_;
};

}  // namespace lizard
