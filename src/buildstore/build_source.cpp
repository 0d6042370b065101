#include "buildstore/build_source.h"

#include "common/sha256.h"

namespace lizard {

BuildStep next_build_step(const BuildFacts& facts) {
  if (facts.cached) return BuildStep::kUseCached;
  if (!facts.answer) return facts.can_ask ? BuildStep::kAskServer : BuildStep::kCompile;
  return *facts.answer == FetchAnswer::kFound ? BuildStep::kKeepFetched : BuildStep::kCompile;
}

FetchAnswer check_fetched(const BuildFetchedMsg& answer, std::string_view payload) {
  if (!answer.found) return FetchAnswer::kNone;
  if (payload.size() != answer.bytes || sha256_hex(payload) != answer.sha256)
    return FetchAnswer::kBadDigest;
  return FetchAnswer::kFound;
}

}  // namespace lizard
