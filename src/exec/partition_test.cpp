#include "exec/partition.h"

#include <gtest/gtest.h>

#include <cstring>

#include "program/codegen.h"

namespace lizard {
namespace {

using nlohmann::json;

const char* kYaml = R"(
sources: {cuda: k.cu}
params:
  dims: {type: int64}
  block: {type: int32, default: 64}
dataset:
  x:     {type: float32, shape: [rows, dims]}
  y:     {type: int64, shape: [rows], input: false, output: true}
  noise: {type: float64, shape: [rows]}
state:
  c: {type: float32, shape: [dims]}
aggregate:
  s: {type: float64, shape: [dims], reduce: sum}
iterate:
  - {kernel: a, block: block}
  - {kernel: b, threads: 1, block: 1}
generate:
  - kernel: fill
  - {kernel: spread, blocks: sm_count, block: 128}
)";

struct Fixture {
  Manifest m;
  ParamValues p;
};

Fixture make(int64_t dims) {
  Fixture f;
  auto m = parse_manifest(kYaml, "config.yaml");
  EXPECT_TRUE(m.ok()) << m.status().message();
  f.m = *m;
  auto p = bind_params(f.m, json{{"dims", dims}});
  EXPECT_TRUE(p.ok()) << p.status().message();
  f.p = *p;
  return f;
}

PartitionData data(int64_t rows, int64_t dims) {
  PartitionData d;
  d.rows = rows;
  d.fields = {std::vector<uint8_t>(rows * dims * 4), {}, std::vector<uint8_t>(rows * 8)};
  return d;
}

TEST(Partition, SizesFieldsAndSaysWhichAreUploaded) {
  Fixture f = make(3);
  auto l = check_partition(f.m, f.p, data(10, 3));
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->field_bytes, (std::vector<uint64_t>{120, 80, 80}));
  EXPECT_EQ(l->init,
            (std::vector<FieldInit>{FieldInit::kUpload, FieldInit::kZero, FieldInit::kUpload}));
}

TEST(Partition, InputFieldsLeftToGeneratorsStartZeroed) {
  Fixture f = make(3);
  PartitionData d = data(10, 3);
  d.fields[2].clear();
  d.generators = {"fill"};
  auto l = check_partition(f.m, f.p, d);
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->init[2], FieldInit::kZero);
  EXPECT_EQ(l->init[0], FieldInit::kUpload);  // given, so uploaded
}

TEST(Partition, RejectsMismatchedPartitions) {
  Fixture f = make(3);
  PartitionData d = data(10, 3);
  d.fields[0].resize(119);
  auto l = check_partition(f.m, f.p, d);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().message(), "dataset field 'x' has 119 bytes for 10 rows, expected 120");

  d = data(10, 3);
  d.fields.pop_back();
  l = check_partition(f.m, f.p, d);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().message(), "partition has 2 fields, the program's dataset has 3");

  d = data(0, 3);
  d.rows = -1;
  l = check_partition(f.m, f.p, d);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().message(), "partition has a negative row count");
}

TEST(Partition, FieldSizesThatOverflowAreTooLarge) {
  Fixture f = make(int64_t{1} << 40);
  PartitionData d;
  d.rows = int64_t{1} << 30;
  d.fields.resize(3);
  auto l = check_partition(f.m, f.p, d);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), Code::kTooLarge);
  EXPECT_NE(l.status().message().find("dataset field 'x' of 1073741824 rows is too large"),
            std::string::npos)
      << l.status().message();
}

TEST(Partition, RowRangesAndSections) {
  EXPECT_TRUE(check_row_range(10, 0, 10).ok());
  EXPECT_TRUE(check_row_range(10, 10, 0).ok());
  EXPECT_TRUE(check_row_range(10, 3, 4).ok());
  for (auto [first, count] : {std::pair<int64_t, int64_t>{-1, 2}, {0, 11}, {5, 6}, {2, -1}}) {
    Status st = check_row_range(10, first, count);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), Code::kInvalidArgument);
    EXPECT_NE(st.message().find("are not within the partition's 10"), std::string::npos);
  }
  EXPECT_EQ(check_row_range(10, 5, 6).message(), "rows [5, 11) are not within the partition's 10");
  Fixture f = make(3);
  auto state = make_section(f.m.state, f.m, f.p);
  auto agg = make_section(f.m.aggregate, f.m, f.p);
  EXPECT_TRUE(check_sections(*state, *agg, state->bytes.size(), agg->bytes.size()).ok());
  EXPECT_FALSE(check_sections(*state, *agg, state->bytes.size() + 16, agg->bytes.size()).ok());
  EXPECT_EQ(no_run_error("iterate").message(), "iterate without begin_run");
  EXPECT_EQ(no_run_error("iterate").code(), Code::kConflict);
}

TEST(Partition, KernelArgsOfASpanPointAtItsRows) {
  Fixture f = make(3);
  RunValues values;
  values.generate_seed = 42;
  RowSpan span{100, {0x10000, 0x20000, 0x30000}, values, 4, 6};
  LaunchLimits limits{8, 256, 1024};
  auto a = kernel_args(f.m, f.p, span, limits);
  ASSERT_TRUE(a.ok()) << a.status().message();
  StructLayout l = dataset_layout(f.m);
  auto read = [&](const std::string& member) {
    uint64_t v = 0;
    std::memcpy(&v, a->dataset.data() + l.find(member)->offset, 8);
    return v;
  };
  EXPECT_EQ(read("rows"), 6u);
  EXPECT_EQ(read("first_row"), 104u);
  EXPECT_EQ(read("generate_seed"), 42u);
  EXPECT_EQ(read("x"), 0x10000u + 4 * 3 * 4);
  EXPECT_EQ(read("y"), 0x20000u + 4 * 8);
  EXPECT_EQ(read("noise"), 0x30000u + 4 * 8);
  ASSERT_EQ(a->launches.size(), 2u);
  EXPECT_EQ(a->launches[0].block[0], 64u);  // block: the param's default
  EXPECT_EQ(a->launches[0].grid[0], 1u);    // 6 rows
  EXPECT_EQ(a->launches[1].grid[0], 1u);    // threads: 1
}

TEST(Partition, GeneratorsLaunchInTheRunsOrder) {
  Fixture f = make(3);
  LaunchLimits limits{8, 256, 1024};
  auto g = generator_launches(f.m, f.p, {"spread", "fill"}, 1000, limits);
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->size(), 2u);
  EXPECT_EQ((*g)[0].step->kernel, "spread");
  EXPECT_EQ((*g)[0].config.grid[0], 8u);  // blocks: sm_count
  EXPECT_EQ((*g)[0].config.block[0], 128u);
  EXPECT_EQ((*g)[1].step->kernel, "fill");
  EXPECT_EQ((*g)[1].config.grid[0], 4u);  // 1000 rows in blocks of 256
  auto bad = generator_launches(f.m, f.p, {"fill", "a"}, 1000, limits);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "'a' is not a generator kernel of the program");
}

}  // namespace
}  // namespace lizard
