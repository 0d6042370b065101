// UserDirectory: who may use the server and as what — each user's name,
// role and quota, found by the bearer token a request sends.  The users
// file (`lizard server --users FILE`) lists them with the SHA-256 digest of
// each token, never the token itself:
//
//   users:
//     - name: alice
//       role: user            # admin | user | reader
//       token_sha256: 9f86d0...
//       quota: {executors: 4, waiting: 20}   # optional; 0 or absent: none
//
// Without a users file the server's single tokens stand for one user each
// (add_token): --token for the admin "admin", --read-token for the reader
// "reader".
//
//   auto dir = UserDirectory::load("/etc/lizard/users.yaml");
//   std::optional<User> who = dir->find(bearer_token(header));
//   if (who && who->may_write()) ...
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace lizard {

// admin: every route, on anyone's runs, uploads and programs; user: their
// own runs and uploads, every record's summary; reader: GET only, all of it.
enum class Role { kAdmin, kUser, kReader };
const char* role_name(Role role);
std::optional<Role> parse_role(std::string_view name);

// What one user may hold at once; 0: no bound.
struct UserQuota {
  int executors = 0;  // executors their running runs hold together
  int waiting = 0;    // runs of theirs queued
};

// Who holds a run or an upload, and the users they share its data with
// ("*": every user).  owner "" is nobody: a run or upload from before owners
// were kept.
struct Ownership {
  std::string owner;
  std::vector<std::string> share;
};

struct User {
  std::string name;
  Role role = Role::kUser;
  UserQuota quota;

  bool may_write() const { return role != Role::kReader; }
  // Whether others' runs' results, fields and logs and others' uploads are
  // open to them (an admin's and a reader's are).
  bool sees_everyones_data() const { return role != Role::kUser; }
  // Whether they may cancel or delete what another user owns.
  bool steers_everyones() const { return role == Role::kAdmin; }
  // Whether they hold it or it is shared with them.
  bool is_among(const Ownership& o) const;
  // Whether they may read its data: results, fields, logs, rows.
  bool reads_data_of(const Ownership& o) const { return sees_everyones_data() || is_among(o); }
  // Whether a run of theirs may read its rows.  A reader starts no runs, so
  // only an admin reaches beyond their own and what is shared with them.
  bool runs_over_data_of(const Ownership& o) const { return steers_everyones() || is_among(o); }
};

class UserDirectory {
 public:
  // Reads the users file at `path`; an error names the file and the entry.
  static Result<UserDirectory> load(const std::string& path);
  // The same from the file's text; `origin` names it in errors.
  static Result<UserDirectory> parse(const std::string& yaml, const std::string& origin);

  // A user known by `token` itself (a daemon's --token); an empty token adds
  // nobody.
  void add_token(const std::string& name, Role role, std::string_view token);

  // The user whose token `token` is.  Every entry is compared, each in
  // constant time, so the answer's time depends only on how many there are.
  std::optional<User> find(std::string_view token) const;
  // The user named `name`.
  std::optional<User> named(std::string_view name) const;
  bool empty() const { return entries_.empty(); }
  std::vector<User> users() const;

  // The digest a users file keeps of `token`: SHA-256, in hex.
  static std::string token_digest(std::string_view token);

 private:
  struct Entry {
    User user;
    std::string digest;  // token_digest of the token
  };
  std::vector<Entry> entries_;
};

// Whether `name` may name a user: 1 to 64 of letters, digits, '_', '-', '.'.
bool valid_user_name(std::string_view name);
// Whether `name` may stand in a share list: a user's name, or "*" (every user).
inline bool valid_share_name(std::string_view name) {
  return name == "*" || valid_user_name(name);
}

// `lizard users add`: adds user `name` to the users file at `path` (made,
// readable by its owner only, when missing) with a new random token, and
// returns that token, which is shown once and kept nowhere.  Refuses a name
// the file already has.
Result<std::string> add_user_to_file(const std::string& path, const User& user);

}  // namespace lizard
