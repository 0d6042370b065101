// Where a worker's build comes from: its own compile cache, the server's
// build store, or its compiler.  A pure function of what the worker knows
// (whether the cache holds the build, whether the server can be asked, and
// what it answered), so that the choice is tested without sockets; the
// worker's BuildShare (buildstore/build_share.h) carries it out.
//
//   BuildFacts facts{cache.contains(name), connected, {}};
//   if (next_build_step(facts) == BuildStep::kAskServer) facts.answer = ask_server();
//   switch (next_build_step(facts)) { case BuildStep::kKeepFetched: ... }
#pragma once

#include <optional>
#include <string_view>

#include "common/status.h"
#include "protocol/messages.h"

namespace lizard {

// What the server's answer to a build_fetch came to, once checked.
enum class FetchAnswer {
  kFound,      // the build, its digest as the server states it
  kNone,       // the server keeps no such build
  kTimedOut,   // no answer within the bound
  kBadDigest,  // the bytes are not what the server states: refused
  kFailed,     // no connection, or a malformed answer
};

struct BuildFacts {
  bool cached = false;                // the worker's compile cache holds the build
  bool can_ask = false;               // connected to a server that takes fetches
  std::optional<FetchAnswer> answer;  // the server's, once asked
};

enum class BuildStep {
  kUseCached,    // load it from the cache: nothing to fetch or compile
  kAskServer,    // send build_fetch and wait (bounded) for the answer
  kKeepFetched,  // store the fetched bytes in the cache and load them
  kCompile,      // compile it here (and offer it to the server after)
};

BuildStep next_build_step(const BuildFacts& facts);

// Checks a build_fetched answer and its payload: kFound only when the server
// has the build and the payload's length and SHA-256 are what it states.
FetchAnswer check_fetched(const BuildFetchedMsg& answer, std::string_view payload);

}  // namespace lizard
