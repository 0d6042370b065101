// HttpRoutes' access rules: who sends a request (caller_of), what their
// role lets them do (check_token), and whose runs, uploads and programs
// they may read or steer (the *_refusal helpers).  The rules, for every
// route, are docs/operations.md's "Users, roles and ownership" table.
#include <spdlog/spdlog.h>

#include "common/auth.h"
#include "server/http_routes.h"
#include "server/ownership_json.h"
#include "users/users_file.h"

namespace lizard {

namespace {

bool is_write(const HttpRequest& req) {
  return req.method != "GET" && req.method != "HEAD";
}

std::string sent_token(const HttpRequest& req) {
  auto it = req.headers.find("authorization");
  return it == req.headers.end() ? "" : bearer_token(it->second);
}

User user_named(const std::string& name, Role role) {
  User u;
  u.name = name;
  u.role = role;
  return u;
}

HttpResponse token_refusal(bool sent) {
  return json_response(401, {{"error", std::string(sent ? "wrong" : "missing") +
                                           " token: send Authorization: Bearer <token>"}});
}

// Someone's name as an answer says it: "" is a record from before owners.
std::string whose(const std::string& owner) {
  return owner.empty() ? "no user's (it predates owners)" : owner + "'s";
}

}  // namespace

// Without a users file: --token is the admin "admin", --read-token the
// reader "reader", and a request the server lets through without a token
// (it asks for none of that method) acts as "anonymous", as before users.
std::variant<User, HttpResponse> HttpRoutes::caller_of(const HttpRequest& req) const {
  const std::string given = sent_token(req);
  const bool writes = is_write(req);
  if (opts_.users) {
    auto users = opts_.users->current();
    std::optional<User> who = users->find(given);
    if (!who) return token_refusal(!given.empty());
    if (writes && !who->may_write())
      return json_response(403, {{"error", who->name + " is a reader: " + req.method +
                                               " needs a user's or an admin's token"}});
    return *who;
  }
  const bool is_admin = !opts_.token.empty() && constant_time_equals(given, opts_.token);
  const bool is_reader = !opts_.read_token.empty() && constant_time_equals(given, opts_.read_token);
  const std::string& need = writes ? opts_.token : opts_.read_token;
  bool ok = need.empty() || constant_time_equals(given, need) || (!writes && is_admin);
  // A token the server does not know is refused even where none is needed:
  // the client would otherwise learn of its wrong token only at its first
  // write.
  const bool guarded = !opts_.token.empty() || !opts_.read_token.empty();
  if (ok && guarded && !given.empty() && !is_admin && !is_reader) ok = false;
  if (!ok) return token_refusal(!given.empty());
  if (is_admin) return user_named("admin", Role::kAdmin);
  if (is_reader) return user_named("reader", Role::kReader);
  return user_named("anonymous", Role::kAdmin);
}

std::optional<HttpResponse> HttpRoutes::check_token(const HttpRequest& req) const {
  auto who = caller_of(req);
  if (auto* refusal = std::get_if<HttpResponse>(&who)) return *refusal;
  return std::nullopt;
}

std::optional<HttpResponse> HttpRoutes::steer_refusal(const User& caller, const std::string& owner,
                                                      const std::string& what,
                                                      const std::string& action) {
  if (caller.steers_everyones() || caller.name == owner) {
    spdlog::info("audit: {} {}s {}", caller.name, action, what);
    return std::nullopt;
  }
  spdlog::info("audit: {} may not {} {}, which is {}", caller.name, action, what, whose(owner));
  return json_response(403, {{"error", what + " is " + whose(owner) + ": only " +
                                           (owner.empty() ? "" : owner + " or ") + "an admin may " +
                                           action + " it"}});
}

std::optional<HttpResponse> HttpRoutes::read_refusal(const User& caller, const Ownership& held,
                                                     const std::string& what) {
  if (caller.reads_data_of(held)) return std::nullopt;
  return json_response(403, {{"error", what + " is " + whose(held.owner) +
                                           ": its data is open to its owner, admins, readers "
                                           "and the users it is shared with only"}});
}

std::optional<HttpResponse> HttpRoutes::upload_refusal(const User& caller,
                                                       const nlohmann::json& meta) {
  return read_refusal(caller, ownership_in(meta), "upload " + meta.value("id", ""));
}

nlohmann::json HttpRoutes::record_for(const User& caller, nlohmann::json record) {
  if (!record.is_object() || caller.reads_data_of(ownership_in(record))) return record;
  record.erase("result");
  if (auto t = record.find("timings"); t != record.end() && t->is_array())
    for (nlohmann::json& iteration : *t)  // its scalars, each step
      if (iteration.is_object()) iteration.erase("state");
  record["result_hidden"] = true;
  return record;
}

}  // namespace lizard
