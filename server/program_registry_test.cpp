#include "server/program_registry.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "program/bundle.h"
#include "server/testing/fakes.h"

namespace lizard {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json bundle(const std::string& name, const std::string& host = "") {
  ProgramBundle b;
  b.config = "info: {name: " + name + R"(}
sources: {cuda: kernel.cu)" +
             (host.empty() ? "" : ", host: host.cpp") + R"(}
dataset: {x: {type: float32, shape: [rows]}}
aggregate: {s: {type: float32, reduce: sum}}
iterate: [k]
)";
  b.sources["kernel.cu"] = "// " + name;
  if (!host.empty()) b.sources["host.cpp"] = host;
  return b.to_json();
}

class ProgramRegistryTest : public ::testing::Test {
 protected:
  ProgramRegistryTest() : compiler_(dir_.path("hooks")) {}
  std::string stored_file(const std::string& hash) const {
    return (fs::path(dir_.path()) / "programs" / (hash + ".json")).string();
  }
  TempDir dir_;
  HostCompiler compiler_;
};

TEST_F(ProgramRegistryTest, PreparedProgramsAreKeptOnlyOnceAdded) {
  ProgramRegistry reg(dir_.path(), &compiler_);
  auto p = reg.prepare(bundle("one"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  const std::string hash = (*p)->image.hash;
  EXPECT_EQ((*p)->image.manifest.name, "one");
  EXPECT_FALSE((*p)->registered_at.empty());
  EXPECT_EQ(reg.find(hash), nullptr);
  EXPECT_FALSE(fs::exists(stored_file(hash)));

  auto [entry, is_new] = reg.add(std::move(p).value());
  EXPECT_TRUE(is_new);
  EXPECT_EQ(reg.find(hash), entry);
  EXPECT_TRUE(fs::exists(stored_file(hash)));
  EXPECT_EQ(reg.list().size(), 1u);
}

TEST_F(ProgramRegistryTest, AddingTheSameProgramAgainKeepsTheFirst) {
  ProgramRegistry reg(dir_.path(), &compiler_);
  auto [first, new1] = reg.add(reg.prepare(bundle("one")).value());
  auto [second, new2] = reg.add(reg.prepare(bundle("one")).value());
  EXPECT_TRUE(new1);
  EXPECT_FALSE(new2);
  EXPECT_EQ(first, second);
  EXPECT_EQ(reg.list().size(), 1u);
}

TEST_F(ProgramRegistryTest, BadBundlesAreTheUsersErrors) {
  ProgramRegistry reg(dir_.path(), &compiler_);
  auto not_a_bundle = reg.prepare(json{{"config", 3}});
  EXPECT_EQ(not_a_bundle.status().code(), Code::kInvalidArgument);
  json missing = bundle("one");
  missing["sources"].erase("kernel.cu");
  auto r = reg.prepare(missing);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("kernel.cu"), std::string::npos) << r.status().message();
  auto host = reg.prepare(bundle("two", "this is not C++"));
  ASSERT_FALSE(host.ok());
  EXPECT_EQ(host.status().code(), Code::kCompileError);
  EXPECT_NE(host.status().message().find("host.cpp: build failed on the server"), std::string::npos)
      << host.status().message();
  EXPECT_TRUE(reg.list().empty());
}

TEST_F(ProgramRegistryTest, HostHooksAreBuilt) {
  ProgramRegistry reg(dir_.path(), &compiler_);
  auto p = reg.prepare(bundle("hooks", R"(
#include "lizard_program.h"
extern "C" int update_global_state(const global_params_t*, const agg_res_t*,
                                   global_state_t*, int64_t it) { return it >= 2; }
)"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_TRUE((*p)->hooks->has_update());
  EXPECT_FALSE((*p)->hooks->has_init());
}

// host.cpp is loaded in a hook process, never in the server: a static
// initialiser that aborts fails the registration and nothing else.
TEST_F(ProgramRegistryTest, AHostCppWhoseStaticInitialiserAbortsIsRefused) {
  ProgramRegistry reg(dir_.path(), &compiler_);
  auto p = reg.prepare(bundle("crash", R"(
#include <stdlib.h>
#include "lizard_program.h"
static int crash = (abort(), 0);
extern "C" int update_global_state(const global_params_t*, const agg_res_t*,
                                   global_state_t*, int64_t) { return 1; }
)"));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Code::kCompileError);
  EXPECT_EQ(p.status().message(),
            "host.cpp does not load on the server: loading host.cpp (its static initialisers) "
            "ended the hook process: killed by signal 6 (SIGABRT, abort())");
  auto fine = reg.prepare(bundle("fine"));
  EXPECT_TRUE(fine.ok()) << fine.status().message();
}

TEST_F(ProgramRegistryTest, AStaticInitialiserThatNeverEndsIsBoundedByTheHookTimeLimit) {
  HookProcessOptions opts;
  opts.call_timeout_ms = 300;
  ProgramRegistry reg(dir_.path(), &compiler_, opts);
  auto p = reg.prepare(bundle("spin", R"(
#include "lizard_program.h"
static int spin() { for (volatile long i = 0;; i = i + 1) {} return 0; }
static int forever = spin();
extern "C" int update_global_state(const global_params_t*, const agg_res_t*,
                                   global_state_t*, int64_t) { return 1; }
)"));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "host.cpp does not load on the server: loading host.cpp (its static initialisers) "
            "did not finish within 300 ms; the hook process was killed");
}

TEST_F(ProgramRegistryTest, RemovedProgramsAreForgottenOnDiskToo) {
  ProgramRegistry reg(dir_.path(), &compiler_);
  auto [entry, _] = reg.add(reg.prepare(bundle("one")).value());
  const std::string hash = entry->image.hash;
  reg.remove(hash);
  EXPECT_EQ(reg.find(hash), nullptr);
  EXPECT_FALSE(fs::exists(stored_file(hash)));
  ProgramRegistry again(dir_.path(), &compiler_);
  again.load_stored();
  EXPECT_TRUE(again.list().empty());
}

TEST_F(ProgramRegistryTest, StoredProgramsComeBackAndBrokenFilesAreSkipped) {
  std::string h1, h2;
  {
    ProgramRegistry reg(dir_.path(), &compiler_);
    h1 = reg.add(reg.prepare(bundle("one")).value()).first->image.hash;
    h2 = reg.add(reg.prepare(bundle("two")).value()).first->image.hash;
  }
  const fs::path dir = fs::path(dir_.path()) / "programs";
  std::ofstream(dir / "garbage.json") << "{ not json";
  std::ofstream(dir / "wrong.json") << R"({"config": "iterate: []", "sources": {}})";
  std::ofstream(dir / "notes.txt") << "ignored";
  ProgramRegistry reg(dir_.path(), &compiler_);
  reg.load_stored();
  ASSERT_EQ(reg.list().size(), 2u);
  ASSERT_NE(reg.find(h1), nullptr);
  EXPECT_EQ(reg.find(h1)->image.manifest.name, "one");
  EXPECT_EQ(reg.find(h2)->image.manifest.name, "two");
  EXPECT_NE(reg.find(h1)->hooks, nullptr);
}

TEST_F(ProgramRegistryTest, AStateDirWithoutProgramsLoadsNothing) {
  ProgramRegistry reg(dir_.path("fresh"), &compiler_);
  reg.load_stored();
  EXPECT_TRUE(reg.list().empty());
}

}  // namespace
}  // namespace lizard
