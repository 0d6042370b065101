#include "cli/users_command.h"

#include <CLI/CLI.hpp>

#include <cstdio>

namespace lizard {

UsersCommand::UsersCommand(CLI::App* app) {
  auto* users = app->add_subcommand("users", "Manage the server's users file (--users)");
  users->require_subcommand(1);
  add_ = users->add_subcommand("add", "Add a user with a new token, printed once");
  add_->add_option("name", user_.name, "The user's name")->required();
  add_->add_option("--users", file_, "The users file (made when missing)")
      ->required()
      ->type_name("FILE");
  add_->add_option("--role", role_, "admin, user or reader")
      ->check(CLI::IsMember({"admin", "user", "reader"}));
  add_->add_option("--max-executors", user_.quota.executors,
                   "Executors their running runs may hold at once (0: no bound)")
      ->check(CLI::NonNegativeNumber);
  add_->add_option("--max-waiting", user_.quota.waiting,
                   "Runs of theirs that may wait in the queue (0: no bound)")
      ->check(CLI::NonNegativeNumber);
  list_ = users->add_subcommand("list", "List the users: names, roles and quotas");
  list_->add_option("--users", file_, "The users file")->required()->type_name("FILE");
}

std::optional<int> UsersCommand::run() const {
  if (add_->parsed()) {
    User user = user_;
    user.role = parse_role(role_).value_or(Role::kUser);
    auto token = add_user_to_file(file_, user);
    if (!token.ok()) {
      std::fprintf(stderr, "lizard users add: %s\n", token.status().message().c_str());
      return 1;
    }
    std::printf("%s\n", token->c_str());
    std::fflush(stdout);  // the token first, then the note about it
    std::fprintf(stderr,
                 "added %s (%s) to %s: the token above is shown only now; give it to %s "
                 "(LIZARD_TOKEN or --token)\n",
                 user.name.c_str(), role_name(user.role), file_.c_str(), user.name.c_str());
    return 0;
  }
  if (list_->parsed()) {
    auto dir = UserDirectory::load(file_);
    if (!dir.ok()) {
      std::fprintf(stderr, "lizard users list: %s\n", dir.status().message().c_str());
      return 1;
    }
    std::printf("%-24s %-7s %9s %8s\n", "NAME", "ROLE", "EXECUTORS", "WAITING");
    for (const User& u : dir->users())
      std::printf("%-24s %-7s %9s %8s\n", u.name.c_str(), role_name(u.role),
                  u.quota.executors ? std::to_string(u.quota.executors).c_str() : "-",
                  u.quota.waiting ? std::to_string(u.quota.waiting).c_str() : "-");
    return 0;
  }
  return std::nullopt;
}

}  // namespace lizard
