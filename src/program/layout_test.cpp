#include "program/layout.h"

#include <gtest/gtest.h>

#include <cstring>

#include "common/subprocess.h"
#include "dataset/test_files.h"
#include "program/codegen.h"
#include "program/reducers.h"

namespace lizard {
namespace {

using nlohmann::json;

const char* kManifest = R"(
sources: {cuda: k.cu}
params:
  k: {type: int32}
  dims: {type: int32}
  scale: {type: float64, default: 2.5}
  flag: {type: uint8, default: 1}
dataset:
  points: {type: float32, shape: [rows, dims]}
  ids: {type: int64, shape: [rows], input: false, output: true}
state:
  centroids: {type: float32, shape: [k, dims]}
  shift: {type: float32}
  tick: {type: int8}
aggregate:
  sums: {type: float32, shape: [k, dims], reduce: sum}
  lo: {type: int32, shape: [k], reduce: min}
  hi: {type: float64, reduce: max}
  p: {type: uint16, reduce: prod}
iterate: [run]
)";

Manifest manifest() {
  auto m = parse_manifest(kManifest, "config.yaml");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.value();
}

TEST(Layout, BindParamsAppliesDefaultsAndChecksTypes) {
  Manifest m = manifest();
  auto p = bind_params(m, json{{"k", 3}, {"dims", 2}});
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->values[2].f, 2.5);
  EXPECT_EQ(p->values[3].u, 1u);
  EXPECT_NE(bind_params(m, json{{"k", 3}}).status().message().find("missing param(s): dims"),
            std::string::npos);
  EXPECT_NE(bind_params(m, json{{"k", 3}, {"dims", 2}, {"flag", 300}})
                .status()
                .message()
                .find("out of range"),
            std::string::npos);
  EXPECT_NE(
      bind_params(m, json{{"k", -1.5}, {"dims", 2}}).status().message().find("expected an integer"),
      std::string::npos);
  EXPECT_NE(bind_params(m, json{{"k", true}, {"dims", 2}})
                .status()
                .message()
                .find("expected a number (int32)"),
            std::string::npos);
  EXPECT_FALSE(bind_params(m, json::array()).ok());
}

TEST(Layout, FloatParamsOutOfTheirTypesRangeAreRefused) {
  auto m = parse_manifest(R"(
sources: {cuda: k.cu}
params:
  threshold: {type: float32}
  scale: {type: float64, default: 1}
iterate: [run]
)",
                          "config.yaml");
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto big = bind_params(*m, json{{"threshold", 1e39}});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), Code::kInvalidArgument);
  EXPECT_NE(big.status().message().find("param 'threshold'"), std::string::npos)
      << big.status().message();
  EXPECT_NE(big.status().message().find("out of range for float32"), std::string::npos)
      << big.status().message();
  EXPECT_FALSE(bind_params(*m, json{{"threshold", -1e39}}).ok());
  EXPECT_FALSE(bind_params(*m, json{{"threshold", 1}, {"scale", INFINITY}}).ok());
  auto edge = bind_params(*m, json{{"threshold", 3.4e38}, {"scale", 1e300}});
  ASSERT_TRUE(edge.ok()) << edge.status().message();
  EXPECT_EQ(edge->values[0].f, static_cast<double>(3.4e38f));
  EXPECT_EQ(edge->values[1].f, 1e300);
}

// A shape that cannot be evaluated for a run's params names the field and
// the dimension, as the manifest spells them.
TEST(Layout, AShapeThatCannotBeEvaluatedNamesItsFieldAndDimension) {
  auto m = parse_manifest(R"(
sources: {cuda: k.cu}
params:
  n: {type: int64}
  d: {type: int64}
state:
  buckets: {type: float32, shape: [4, n / d]}
  wide: {type: float32, shape: [n * n]}
iterate: [run]
)",
                          "config.yaml");
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto p = bind_params(*m, json{{"n", 8}, {"d", 0}});
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(field_dims(m->state[0], *m, *p).status().message(),
            "state.buckets.shape[1]: division by zero in \"n / d\"");
  auto big = bind_params(*m, json{{"n", int64_t{1} << 40}, {"d", 1}});
  ASSERT_TRUE(big.ok()) << big.status().message();
  EXPECT_EQ(field_dims(m->state[1], *m, *big).status().message(),
            "state.wide.shape[0]: overflow in \"n * n\"");
}

TEST(Layout, StructLayoutFollowsCAlignment) {
  Manifest m = manifest();
  StructLayout p = params_layout(m);
  EXPECT_EQ(p.find("k")->offset, 0u);
  EXPECT_EQ(p.find("dims")->offset, 4u);
  EXPECT_EQ(p.find("scale")->offset, 8u);
  EXPECT_EQ(p.find("flag")->offset, 16u);
  EXPECT_EQ(p.size, 24u);
  StructLayout s = state_layout(m);
  EXPECT_TRUE(s.find("centroids")->pointer);
  EXPECT_FALSE(s.find("shift")->pointer);  // scalars by value
  EXPECT_EQ(s.size, 16u);
  StructLayout a = aggregate_layout(m);
  for (const auto& mem : a.members) EXPECT_TRUE(mem.pointer) << mem.name;
  StructLayout d = dataset_layout(m);
  EXPECT_EQ(d.members[0].name, "rows");
  EXPECT_EQ(d.members[1].name, "first_row");
  // Then the run's values (program/run_values.h), then a pointer per field.
  const size_t values = run_value_members().size();
  for (size_t k = 0; k < values; ++k) EXPECT_EQ(d.members[2 + k].name, run_value_members()[k].name);
  EXPECT_EQ(d.members[2].name, "generate_seed");
  EXPECT_EQ(d.members[2 + values].name, "iteration");  // the one value set per launch
  EXPECT_EQ(d.members[2 + values].type, DType::kInt64);
  EXPECT_EQ(d.members[2 + values].offset, dataset_iteration_offset());
  EXPECT_EQ(d.members[3 + values].name, "points");
  EXPECT_EQ(d.size, 16u + 8 * values + 8 + 16);
}

TEST(Layout, TheIterationIsSetInAPackedDatasetInPlace) {
  Manifest m = manifest();
  StructLayout d = dataset_layout(m);
  RunValues v;
  v.generate_seed = 7;
  v.run_seed = 9;
  std::vector<uint8_t> packed = pack_dataset(d, 10, 20, {0x1000}, v);
  auto read = [&](const char* name) {
    uint64_t x = 0;
    std::memcpy(&x, packed.data() + d.find(name)->offset, 8);
    return x;
  };
  EXPECT_EQ(read("iteration"), 0u);
  set_dataset_iteration(&packed, 41);
  EXPECT_EQ(read("iteration"), 41u);
  EXPECT_EQ(read("rows"), 10u);
  EXPECT_EQ(read("first_row"), 20u);
  EXPECT_EQ(read("generate_seed"), 7u);
  EXPECT_EQ(read("run_seed"), 9u);
  EXPECT_EQ(read("points"), 0x1000u);
}

// The generated header must compile and agree with StructLayout: it carries
// static_asserts of every offset and size.
TEST(Layout, GeneratedHeaderCompilesAndAssertsTheLayout) {
  Manifest m = manifest();
  std::string header = generate_program_header(m);
  EXPECT_NE(header.find("typedef struct {\n  float *centroids;\n  float shift;\n  int8_t tick;\n} "
                        "global_state_t;"),
            std::string::npos)
      << header;
  TempDir tmp;  // of its own: tests run in parallel
  const std::string dir = tmp.path();
  FILE* f = std::fopen((dir + "/lizard_program.h").c_str(), "w");
  std::fputs(header.c_str(), f);
  std::fclose(f);
  f = std::fopen((dir + "/use.c").c_str(), "w");
  std::fputs(
      "#include \"lizard_program.h\"\nint main(void) { global_params_t p; p.k = 1; return p.k - 1; "
      "}\n",
      f);
  std::fclose(f);
  for (const char* cc : {"cc", "c++"}) {
    std::vector<std::string> argv = {cc, "-fsyntax-only", "-I" + dir};
    if (std::string(cc) == "c++") argv.insert(argv.end(), {"-x", "c++"});
    argv.push_back(dir + "/use.c");
    auto r = run_command(argv);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->exit_code, 0) << cc << ": " << r->output;
  }
}

TEST(Layout, PackedStructsPointIntoTheSectionBuffer) {
  Manifest m = manifest();
  auto p = bind_params(m, json{{"k", 2}, {"dims", 3}});
  auto state = make_section(m.state, m, p.value());
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->slots[0].count, 6);
  float shift = 0.25f;
  std::memcpy(state->data(state->slots[1]), &shift, 4);
  StructLayout sl = state_layout(m);
  auto packed = pack_section(sl, *state, 0x1000);
  uint64_t ptr;
  std::memcpy(&ptr, packed.data() + sl.find("centroids")->offset, 8);
  EXPECT_EQ(ptr, 0x1000 + state->slots[0].offset);
  float got;
  std::memcpy(&got, packed.data() + sl.find("shift")->offset, 4);
  EXPECT_EQ(got, 0.25f);
  float changed = 9.f;
  std::memcpy(packed.data() + sl.find("shift")->offset, &changed, 4);
  unpack_section_values(sl, packed, &state.value());
  std::memcpy(&got, state->data(state->slots[1]), 4);
  EXPECT_EQ(got, 9.f);
  auto params = pack_params(params_layout(m), p.value());
  int32_t dims;
  std::memcpy(&dims, params.data() + 4, 4);
  EXPECT_EQ(dims, 3);
}

TEST(Layout, FieldAddressesOfASliceAdvanceByRowWidth) {
  Manifest m = manifest();
  auto p = bind_params(m, {{"k", 2}, {"dims", 3}});
  ASSERT_TRUE(p.ok());
  auto at = field_ptrs_at_row(m, *p, {1000, 50000}, 10);
  ASSERT_TRUE(at.ok()) << at.status().message();
  EXPECT_EQ(*at, (std::vector<uint64_t>{1000 + 10 * 3 * 4, 50000 + 10 * 8}));
  EXPECT_FALSE(field_ptrs_at_row(m, *p, {1000}, 10).ok());
}

TEST(Reducers, IdentitiesAndFolds) {
  Manifest m = manifest();
  auto p = bind_params(m, json{{"k", 2}, {"dims", 1}});
  auto a = make_section(m.aggregate, m, p.value());
  auto b = make_section(m.aggregate, m, p.value());
  set_identity(&a.value());
  set_identity(&b.value());
  const int32_t* lo = reinterpret_cast<const int32_t*>(a->data(a->slots[1]));
  EXPECT_EQ(lo[0], std::numeric_limits<int32_t>::max());
  const double* hi = reinterpret_cast<const double*>(a->data(a->slots[2]));
  EXPECT_EQ(*hi, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(*reinterpret_cast<const uint16_t*>(a->data(a->slots[3])), 1);
  reinterpret_cast<float*>(b->data(b->slots[0]))[1] = 2.5f;
  reinterpret_cast<int32_t*>(b->data(b->slots[1]))[0] = -4;
  *reinterpret_cast<double*>(b->data(b->slots[2])) = 7;
  *reinterpret_cast<uint16_t*>(b->data(b->slots[3])) = 3;
  fold_into(&a.value(), b.value());
  fold_into(&a.value(), b.value());
  EXPECT_EQ(reinterpret_cast<const float*>(a->data(a->slots[0]))[1], 5.f);
  EXPECT_EQ(lo[0], -4);
  EXPECT_EQ(*hi, 7);
  EXPECT_EQ(*reinterpret_cast<const uint16_t*>(a->data(a->slots[3])), 9);
}

}  // namespace
}  // namespace lizard
