// Registering programs with a server and finding registered ones, for
// `lizard run PROGRAM` and load_program.  A program is named by its
// directory (registered on the way: POST /programs, which waits until every
// connected worker has built it) or by its checksum (or a unique prefix of
// one, as the server's log prints them).
//
//   Result<ProgramRef> p = resolve_program(api, "examples/kmeans", 900);
//   p->hash; p->manifest.dataset ...
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "cli/server_api.h"
#include "common/status.h"
#include "program/bundle.h"
#include "program/manifest.h"

namespace lizard {

// A registered program.
struct ProgramRef {
  std::string hash;
  Manifest manifest;
  nlohmann::json workers;  // worker id -> "ready", "building" or {"error": log}
};

// Sends `bundle` to the server; errors carry the server's message (a
// manifest error, a compiler log) after "the server refused the program (HTTP N)".
Result<ProgramRef> post_program(const ServerApi& api, const ProgramBundle& bundle, int timeout_s);

// A directory is registered; anything else must be a registered program's
// checksum or a prefix of exactly one.
Result<ProgramRef> resolve_program(const ServerApi& api, const std::string& program, int timeout_s);

}  // namespace lizard
