#include "users/user_directory.h"

#include <fcntl.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/auth.h"
#include "common/sha256.h"

namespace lizard {

bool User::is_among(const Ownership& o) const {
  if (name == o.owner) return true;
  for (const std::string& n : o.share)
    if (n == "*" || n == name) return true;
  return false;
}

namespace {

bool is_hex_digest(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

Result<int> quota_count(const YAML::Node& quota, const char* key, const std::string& where) {
  if (!quota || !quota[key]) return 0;
  int n = -1;
  try {
    n = quota[key].as<int>();
  } catch (const YAML::Exception&) {
  }
  if (n < 0) return invalid_argument(where + ": quota." + key + ": expected a count from 0 up");
  return n;
}

Result<User> user_of(const YAML::Node& node, const std::string& where, std::string* digest) {
  if (!node.IsMap()) return invalid_argument(where + ": expected a map (name, role, token_sha256)");
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>("");
    if (key != "name" && key != "role" && key != "token_sha256" && key != "quota")
      return invalid_argument(where + ": unknown key '" + key +
                              "' (expected name, role, token_sha256, quota)");
  }
  User u;
  u.name = node["name"] ? node["name"].as<std::string>("") : "";
  if (!valid_user_name(u.name))
    return invalid_argument(where + ": name: expected 1 to 64 letters, digits, '_', '-' or '.'");
  const std::string role = node["role"] ? node["role"].as<std::string>("") : "user";
  auto parsed = parse_role(role);
  if (!parsed)
    return invalid_argument(where + " (" + u.name +
                            "): role: expected admin, user or reader, got '" + role + "'");
  u.role = *parsed;
  *digest = node["token_sha256"] ? node["token_sha256"].as<std::string>("") : "";
  if (!is_hex_digest(*digest))
    return invalid_argument(where + " (" + u.name +
                            "): token_sha256: expected the token's SHA-256 in 64 lower-case hex "
                            "digits (lizard users add NAME makes one)");
  const YAML::Node quota = node["quota"];
  if (quota && !quota.IsMap())
    return invalid_argument(where + " (" + u.name + "): quota: expected {executors, waiting}");
  LIZARD_ASSIGN_OR_RETURN(u.quota.executors, quota_count(quota, "executors", where));
  LIZARD_ASSIGN_OR_RETURN(u.quota.waiting, quota_count(quota, "waiting", where));
  return u;
}

std::string new_token() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return "";
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

// Replaces `path` with `text` whole: a temporary file beside it, readable by
// its owner only, flushed, then renamed over it.
Status replace_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return internal_error("cannot write " + tmp + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const bool ok = done == text.size() && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return internal_error("cannot write " + path + ": " + why);
  }
  return Status::Ok();
}

}  // namespace

const char* role_name(Role role) {
  switch (role) {
    case Role::kAdmin:
      return "admin";
    case Role::kReader:
      return "reader";
    case Role::kUser:
      break;
  }
  return "user";
}

std::optional<Role> parse_role(std::string_view name) {
  if (name == "admin") return Role::kAdmin;
  if (name == "user") return Role::kUser;
  if (name == "reader") return Role::kReader;
  return std::nullopt;
}

bool valid_user_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '-' || c == '.'))
      return false;
  return true;
}

std::string UserDirectory::token_digest(std::string_view token) {
  return sha256_hex(token);
}

Result<UserDirectory> UserDirectory::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot read the users file " + path + ": " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

Result<UserDirectory> UserDirectory::parse(const std::string& yaml, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    return invalid_argument(origin + ": not YAML: " + e.what());
  }
  UserDirectory dir;
  if (root.IsNull()) return dir;  // an empty file: nobody yet
  if (!root.IsMap() || !root["users"] || !(root["users"].IsSequence() || root["users"].IsNull()))
    return invalid_argument(origin + ": expected a top-level 'users:' list");
  int i = 0;
  for (const YAML::Node& node : root["users"]) {
    const std::string where = origin + ": users[" + std::to_string(i++) + "]";
    std::string digest;
    LIZARD_ASSIGN_OR_RETURN(User u, user_of(node, where, &digest));
    for (const Entry& e : dir.entries_) {
      if (e.user.name == u.name) return invalid_argument(where + ": a second user named " + u.name);
      if (e.digest == digest)
        return invalid_argument(where + " (" + u.name + "): the same token as " + e.user.name);
    }
    dir.entries_.push_back({std::move(u), std::move(digest)});
  }
  return dir;
}

void UserDirectory::add_token(const std::string& name, Role role, std::string_view token) {
  if (token.empty()) return;
  User u;
  u.name = name;
  u.role = role;
  entries_.push_back({std::move(u), token_digest(token)});
}

std::optional<User> UserDirectory::find(std::string_view token) const {
  if (token.empty()) return std::nullopt;
  const std::string digest = token_digest(token);
  const Entry* found = nullptr;
  for (const Entry& e : entries_)  // no early exit
    if (constant_time_equals(digest, e.digest) && !found) found = &e;
  if (!found) return std::nullopt;
  return found->user;
}

std::optional<User> UserDirectory::named(std::string_view name) const {
  for (const Entry& e : entries_)
    if (e.user.name == name) return e.user;
  return std::nullopt;
}

std::vector<User> UserDirectory::users() const {
  std::vector<User> out;
  for (const Entry& e : entries_) out.push_back(e.user);
  return out;
}

Result<std::string> add_user_to_file(const std::string& path, const User& user) {
  if (!valid_user_name(user.name))
    return invalid_argument("a user's name is 1 to 64 letters, digits, '_', '-' or '.'");
  std::string text;
  if (std::ifstream in(path, std::ios::binary); in) {
    std::stringstream s;
    s << in.rdbuf();
    text = s.str();
  } else if (errno != ENOENT) {
    return internal_error("cannot read " + path + ": " + std::strerror(errno));
  }
  LIZARD_ASSIGN_OR_RETURN(UserDirectory dir, UserDirectory::parse(text, path));
  if (dir.named(user.name))
    return Status(Code::kConflict, path + " already has a user named " + user.name);
  const std::string token = new_token();
  if (token.empty()) return internal_error("no random bytes for a token (RAND_bytes failed)");
  YAML::Node root = text.empty() ? YAML::Node(YAML::NodeType::Map) : YAML::Load(text);
  YAML::Node entry;
  entry["name"] = user.name;
  entry["role"] = role_name(user.role);
  entry["token_sha256"] = UserDirectory::token_digest(token);
  if (user.quota.executors > 0 || user.quota.waiting > 0) {
    entry["quota"]["executors"] = user.quota.executors;
    entry["quota"]["waiting"] = user.quota.waiting;
  }
  root["users"].push_back(entry);
  YAML::Emitter out;
  out << root;
  LIZARD_RETURN_IF_ERROR(replace_file(path, std::string(out.c_str()) + "\n"));
  return token;
}

}  // namespace lizard
