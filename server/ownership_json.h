// The owner and share list of a run record or an upload's description, as
// both are stored: {"owner": "alice", "share": ["bob", "*"]}.  Missing or
// malformed fields read as nobody's and shared with no one.
//
//   Ownership o = ownership_in(meta);
//   if (!caller.reads_data_of(o)) ...
#pragma once

#include <nlohmann/json.hpp>

#include "users/user_directory.h"

namespace lizard {

inline Ownership ownership_in(const nlohmann::json& j) {
  Ownership o;
  if (!j.is_object()) return o;
  if (auto it = j.find("owner"); it != j.end() && it->is_string()) o.owner = it->get<std::string>();
  if (auto s = j.find("share"); s != j.end() && s->is_array())
    for (const auto& name : *s)
      if (name.is_string()) o.share.push_back(name.get<std::string>());
  return o;
}

}  // namespace lizard
