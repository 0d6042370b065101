#include "program/specialisation.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "common/subprocess.h"
#include "dataset/test_files.h"
#include "program/codegen.h"

namespace lizard {
namespace {

using nlohmann::json;

const char* kManifest = R"(
sources: {cuda: k.cu}
params:
  k:     {type: int32}
  dims:  {type: int32, specialize: true, default: 4}
  big:   {type: int64, specialize: true}
  scale: {type: float32, specialize: true, default: 0.1}
  bits:  {type: uint64, specialize: false}
dataset:
  points: {type: float32, shape: [rows, dims]}
iterate: [run]
)";

Manifest manifest() {
  auto m = parse_manifest(kManifest, "config.yaml");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *m : Manifest{};
}

// Writes `header` and `code` to a directory and checks them with the C and
// C++ compilers; returns "" or the first failure's output.
std::string compile(const std::string& header, const std::string& code, bool c_too) {
  TempDir tmp;  // of its own: tests run in parallel
  const std::string dir = tmp.path();
  for (const auto& [name, text] :
       {std::pair<std::string, std::string>{"lizard_program.h", header}, {"use.c", code}}) {
    FILE* f = std::fopen((dir + "/" + name).c_str(), "w");
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
  for (const char* cc : {"c++", "cc"}) {
    if (!c_too && std::string(cc) == "cc") continue;
    std::vector<std::string> argv = {cc, "-fsyntax-only", "-Wall", "-Wextra", "-I" + dir};
    if (std::string(cc) == "c++") argv.insert(argv.end(), {"-x", "c++", "-std=c++17"});
    argv.push_back(dir + "/use.c");
    auto r = run_command(argv);
    if (!r.ok()) return r.status().message();
    if (r->exit_code != 0) return std::string(cc) + ": " + r->output;
  }
  return "";
}

TEST(Specialisation, ManifestMarksParams) {
  Manifest m = manifest();
  EXPECT_FALSE(m.params[0].specialize);
  EXPECT_TRUE(m.params[1].specialize);
  EXPECT_FALSE(m.params[4].specialize);
  EXPECT_TRUE(m.has_specialised_params());
}

TEST(Specialisation, ManifestRejectsBadValuesAndReservedNames) {
  auto bad = parse_manifest(
      "sources: {cuda: k.cu}\nparams: {d: {type: int32, specialize: maybe}}\niterate: [r]\n", "c");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("params.d.specialize: expected true or false"),
            std::string::npos)
      << bad.status().message();
  auto reserved = parse_manifest(
      "sources: {cuda: k.cu}\nparams: {lizard_specialised_d: {type: int32}}\niterate: [r]\n", "c");
  ASSERT_FALSE(reserved.ok());
  EXPECT_NE(reserved.status().message().find("reserved"), std::string::npos);
}

TEST(Specialisation, RunValuesAndDefaultsMakeTheKey) {
  Manifest m = manifest();
  auto p = bind_params(m, json{{"k", 3}, {"dims", 32}, {"big", -5}, {"scale", 0.5}, {"bits", 7}});
  ASSERT_TRUE(p.ok()) << p.status().message();
  Specialisation run = run_specialisation(m, *p);
  EXPECT_EQ(run.key(), "big=-5,dims=32,scale=0.5");
  EXPECT_EQ(run.to_json(), (json{{"big", -5}, {"dims", 32}, {"scale", 0.5}}));
  // Defaults: `big` has none and stays a runtime member.
  Specialisation defaults = default_specialisation(m);
  EXPECT_EQ(defaults.key(), "dims=4,scale=0.1");
  // A run at the defaults has the defaults' key, so it finds the registration's build.
  auto at_defaults = bind_params(m, json{{"k", 3}, {"big", 1}, {"bits", 0}});
  ASSERT_TRUE(at_defaults.ok());
  Specialisation d2 = run_specialisation(m, *at_defaults);
  d2.values.erase("big");
  EXPECT_EQ(d2.key(), defaults.key());
}

TEST(Specialisation, HeaderBakesValuesAndKeepsTheLayout) {
  Manifest m = manifest();
  auto p =
      bind_params(m, json{{"k", 3}, {"dims", 32}, {"big", INT64_MIN}, {"scale", 0.1}, {"bits", 7}});
  ASSERT_TRUE(p.ok());
  const std::string header = generate_program_header(m, run_specialisation(m, *p));
  EXPECT_NE(header.find("static constexpr int32_t dims = (int32_t)32LL;"), std::string::npos)
      << header;
  // Kernels use the value where C++ needs a constant; the storage member keeps
  // the offsets the host packs (the header asserts them).
  const std::string code =
      "#include \"lizard_program.h\"\n"
      "template <int D> struct Row { float v[D]; };\n"
      "int use(global_params_t p) {\n"
      "  static_assert(p.dims == 32, \"dims\");\n"
      "  static_assert(p.big == -9223372036854775807LL - 1, \"big\");\n"
      "  static_assert(p.scale == 0.1f, \"scale\");\n"
      "  static_assert(sizeof(global_params_t) == 32, \"size\");\n"
      "  Row<p.dims> r;\n"
      "  r.v[0] = p.scale;\n"
      "  return p.k + (int)r.v[0] + (int)p.bits;\n"
      "}\n";
  EXPECT_EQ(compile(header, code, false), "");
  // C sees ordinary members.
  EXPECT_EQ(
      compile(header,
              "#include \"lizard_program.h\"\nint f(global_params_t p) { return p.dims; }\n", true),
      "");
}

TEST(Specialisation, WithoutValuesParamsStayRuntimeMembers) {
  Manifest m = manifest();
  const std::string header = generate_program_header(m);
  EXPECT_EQ(header.find("constexpr"), std::string::npos);
  const std::string code =
      "#include \"lizard_program.h\"\n"
      "int use(global_params_t p) { static_assert(p.dims == 4, \"dims\"); return 0; }\n";
  EXPECT_NE(compile(header, code, false), "");
  // A specialised param without a default stays a runtime member in the defaults' build.
  const std::string defaults = generate_program_header(m, default_specialisation(m));
  EXPECT_NE(defaults.find("static constexpr int32_t dims"), std::string::npos);
  EXPECT_EQ(defaults.find("static constexpr int64_t big"), std::string::npos);
  EXPECT_EQ(compile(defaults, code, false), "");
}

}  // namespace
}  // namespace lizard
