// next_build_step and check_fetched: a worker loads what its cache holds,
// asks the server only when it can, keeps only a build whose bytes are what
// the server states, and compiles in every other case.
#include "buildstore/build_source.h"

#include <gtest/gtest.h>

#include "common/sha256.h"

namespace lizard {
namespace {

BuildFacts facts(bool cached, bool can_ask, std::optional<FetchAnswer> answer = std::nullopt) {
  BuildFacts f;
  f.cached = cached;
  f.can_ask = can_ask;
  f.answer = answer;
  return f;
}

TEST(NextBuildStep, FollowsWhatTheWorkerKnows) {
  EXPECT_EQ(next_build_step(facts(true, true)), BuildStep::kUseCached);
  EXPECT_EQ(next_build_step(facts(true, false)), BuildStep::kUseCached);
  EXPECT_EQ(next_build_step(facts(false, true)), BuildStep::kAskServer);
  EXPECT_EQ(next_build_step(facts(false, false)), BuildStep::kCompile);
  EXPECT_EQ(next_build_step(facts(false, true, FetchAnswer::kFound)), BuildStep::kKeepFetched);
  for (FetchAnswer a :
       {FetchAnswer::kNone, FetchAnswer::kTimedOut, FetchAnswer::kBadDigest, FetchAnswer::kFailed})
    EXPECT_EQ(next_build_step(facts(false, true, a)), BuildStep::kCompile);
}

TEST(CheckFetched, KeepsOnlyBytesWithTheStatedDigest) {
  BuildFetchedMsg m{1, true, sha256_hex("build"), 5, ""};
  EXPECT_EQ(check_fetched(m, "build"), FetchAnswer::kFound);
  EXPECT_EQ(check_fetched(m, "bui1d"), FetchAnswer::kBadDigest);
  EXPECT_EQ(check_fetched(m, "builds"), FetchAnswer::kBadDigest);
  m.bytes = 6;
  EXPECT_EQ(check_fetched(m, "build"), FetchAnswer::kBadDigest);
  m.found = false;
  EXPECT_EQ(check_fetched(m, ""), FetchAnswer::kNone);
}

}  // namespace
}  // namespace lizard
