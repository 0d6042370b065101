// build_key: every part of a build's identity changes its key, and values
// that are not the program's specialised params are refused.
#include "buildstore/build_key.h"

#include <gtest/gtest.h>

#include <set>

namespace lizard {
namespace {

Manifest manifest() {
  Manifest m;
  m.name = "kmeans";
  ParamSpec k;
  k.name = "k";
  k.specialize = true;
  ParamSpec iters;
  iters.name = "max_iterations";
  m.params = {k, iters};
  return m;
}

BuildRef ref(int k, std::string tier = "optimised", std::string arch = "cpu") {
  BuildRef r;
  r.hash = "ignored: the server names the program";
  r.values = {{"k", k}};
  r.tier = std::move(tier);
  r.arch = std::move(arch);
  return r;
}

TEST(BuildKey, EachPartOfTheBuildChangesItsKey) {
  const Manifest m = manifest();
  const std::string hash(64, 'a');
  std::set<std::string> keys;
  for (auto r :
       {build_key(m, hash, ref(4), "tc1"), build_key(m, std::string(64, 'b'), ref(4), "tc1"),
        build_key(m, hash, ref(5), "tc1"), build_key(m, hash, ref(4, "quick"), "tc1"),
        build_key(m, hash, ref(4, "optimised", "sm_90"), "tc1"),
        build_key(m, hash, ref(4), "tc2")}) {
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->size(), 64u);
    keys.insert(*r);
  }
  EXPECT_EQ(keys.size(), 6u);
  EXPECT_EQ(*build_key(m, hash, ref(4), "tc1"), *build_key(m, hash, ref(4), "tc1"));
}

// The key is the program's as the server holds it: the hash a worker puts
// in the message plays no part.
TEST(BuildKey, TheWorkersHashPlaysNoPart) {
  BuildRef a = ref(4), b = ref(4);
  b.hash = "another program";
  EXPECT_EQ(*build_key(manifest(), std::string(64, 'a'), a, "tc"),
            *build_key(manifest(), std::string(64, 'a'), b, "tc"));
}

TEST(BuildKey, RefusesWhatIsNotTheProgramsToSpecialise) {
  const Manifest m = manifest();
  const std::string hash(64, 'a');
  BuildRef r = ref(4);
  r.values = {{"max_iterations", 3}};  // not specialised
  EXPECT_EQ(build_key(m, hash, r, "tc").status().code(), Code::kInvalidArgument);
  r.values = {{"nope", 3}};
  EXPECT_EQ(build_key(m, hash, r, "tc").status().code(), Code::kInvalidArgument);
  r.values = {{"k", "four"}};
  EXPECT_EQ(build_key(m, hash, r, "tc").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(build_key(m, hash, ref(4, "slow"), "tc").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(build_key(m, hash, ref(4), "").status().code(), Code::kInvalidArgument);
  r.values = nlohmann::json::object();  // the registered build
  EXPECT_TRUE(build_key(m, hash, r, "tc").ok());
}

TEST(BuildIdentity, ComesFromTheHello) {
  HelloMsg h;
  h.toolchain = "tc";
  ExecutorInfo cpu;
  cpu.kind = "cpu";
  ExecutorInfo gpu;
  gpu.kind = "cuda";
  gpu.arch = "sm_90";
  h.executors = {cpu, gpu, gpu};
  const BuildIdentity id = BuildIdentity::of(h);
  EXPECT_EQ(id.archs, (std::vector<std::string>{"cpu", "sm_90"}));
  EXPECT_TRUE(id.builds_for("sm_90"));
  EXPECT_FALSE(id.builds_for("sm_80"));
  h.toolchain.clear();
  EXPECT_FALSE(BuildIdentity::of(h).builds_for("cpu"));  // a worker that shares nothing
}

}  // namespace
}  // namespace lizard
