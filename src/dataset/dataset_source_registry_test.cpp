#include "dataset/dataset_source_registry.h"

#include <gtest/gtest.h>

#include <cstring>

#include "dataset/json_values.h"
#include "dataset/test_files.h"
#include "protocol/messages.h"

namespace lizard {
namespace {

using nlohmann::json;

// A kind of source that lives only here: `rows` rows of one value
// ({"constant": 2.5, "rows": 4}), sent as that value and filled on the worker.
class ConstantSource final : public DatasetSource {
 public:
  std::vector<std::string> request_keys() const override { return {"constant", "rows"}; }
  std::vector<std::string> wire_names() const override { return {"constant"}; }
  RowDelivery delivery() const override { return RowDelivery::kRows; }

  Result<ParsedSource> parse(const json& spec, const SourceField& field,
                             const SourceContext&) const override {
    if (!spec["constant"].is_number())
      return invalid_argument(field.what + ": `constant` must be a number");
    if (!spec.contains("rows") || !spec["rows"].is_number_integer() ||
        spec["rows"].get<int64_t>() < 1)
      return invalid_argument(field.what + ": `rows` must be a positive integer");
    ParsedSource p;
    p.rows = spec["rows"].get<int64_t>();
    p.options["value"] = spec["constant"];
    return p;
  }
  Status to_wire(const ParsedSource& parsed, const WireRows&, FieldSource* out,
                 std::string*) const override {
    out->delivery = RowDelivery::kRows;
    out->options["value"] = parsed.options["value"];
    return Status::Ok();
  }
  void encode(const FieldSource& field, json* out) const override {
    out->update({{"source", "constant"}, {"value", field.options.value("value", 0.0)}});
  }
  Status decode(std::string_view, const json& in, FieldSource* field) const override {
    field->delivery = RowDelivery::kRows;
    if (!in.contains("value")) return Status::Ok();
    if (!in["value"].is_number()) return invalid_argument("value is not a number");
    field->options["value"] = in["value"];
    return Status::Ok();
  }
  Result<std::vector<uint8_t>> part_rows(const FieldSource& field,
                                         const PartRows& part) const override {
    LIZARD_ASSIGN_OR_RETURN(
        std::vector<uint8_t> one,
        values_from_json(field.options["value"], part.type, {}, "value", nullptr));
    std::vector<uint8_t> rows(part.bytes);
    for (size_t at = 0; at + one.size() <= rows.size(); at += one.size())
      std::memcpy(rows.data() + at, one.data(), one.size());
    return rows;
  }
};

// The built-in kinds and, while a test runs, the constant one.
class DatasetSourceRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(registry().add(std::make_unique<ConstantSource>()).ok()); }
  void TearDown() override { registry().remove("constant"); }
  static DatasetSourceRegistry& registry() { return DatasetSourceRegistry::global(); }

  static SourceField float_field(int64_t width) {
    SourceField f;
    f.what = "dataset field 'x'";
    f.type = DType::kFloat32;
    f.width = width;
    return f;
  }
};

TEST_F(DatasetSourceRegistryTest, ANewKindParsesCountsAndTravelsWithoutOtherChanges) {
  auto parsed = registry().parse(json{{"constant", 2.5}, {"rows", 4}}, float_field(2), {});
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->rows, 4);
  EXPECT_EQ(parsed->width, 2);
  ASSERT_NE(parsed->source, nullptr);
  EXPECT_EQ(parsed->source->key(), "constant");
  EXPECT_TRUE(parsed->row_source.empty());

  // One worker's rows 1..3, through a run_start's header and back.
  RunStartMsg start;
  FieldSource f;
  f.name = "x";
  f.source = parsed->source;
  std::string payload;
  ASSERT_TRUE(parsed->source->to_wire(*parsed, {1, 3, 8, false}, &f, &payload).ok());
  start.fields.push_back(f);
  Message msg = start.to_message(payload);
  EXPECT_EQ(msg.header["fields"][0]["source"], "constant");
  EXPECT_EQ(msg.header["fields"][0]["value"], 2.5);
  auto back = RunStartMsg::parse(msg.header);
  ASSERT_TRUE(back.ok()) << back.status().message();
  const FieldSource& got = back->fields[0];
  EXPECT_EQ(got.source, parsed->source);
  EXPECT_EQ(got.delivery, RowDelivery::kRows);

  // The worker's rows of one part: 2 rows of 2 float32 values.
  auto rows = got.source->part_rows(got, {msg.payload, 8, 16, DType::kFloat32});
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  std::vector<float> values(4);
  ASSERT_EQ(rows->size(), 16u);
  std::memcpy(values.data(), rows->data(), 16);
  EXPECT_EQ(values, (std::vector<float>{2.5f, 2.5f, 2.5f, 2.5f}));
}

TEST_F(DatasetSourceRegistryTest, ErrorsListTheRegisteredKinds) {
  auto both = registry().kind_of(json{{"values", {1}}, {"constant", 1}}, "field 'x'");
  EXPECT_EQ(both.status().message(),
            "field 'x': give one of `values`, `path`, `upload`, `generate` or `constant`, not "
            "both `values` and `constant`");
  auto extra = registry().kind_of(json{{"constant", 1}, {"seed", 2}}, "field 'x'");
  EXPECT_EQ(extra.status().message(),
            "field 'x': unknown key 'seed' in a `constant` source (expected constant, rows)");
  auto bad = registry().parse(json{{"constant", "a"}, {"rows", 2}}, float_field(1), {});
  EXPECT_EQ(bad.status().message(), "dataset field 'x': `constant` must be a number");
}

TEST_F(DatasetSourceRegistryTest, KindsAreUniqueByKeyAndWireName) {
  EXPECT_FALSE(registry().add(std::make_unique<ConstantSource>()).ok());
  registry().remove("constant");
  EXPECT_EQ(registry().request_key_list(), "`values`, `path`, `upload` or `generate`");
  EXPECT_EQ(registry().kind_of(json{{"constant", 1}}, "w").status().message(),
            "w: give `values`, `path`, `upload` or `generate`");
  EXPECT_FALSE(registry().for_wire("constant").ok());
  ASSERT_TRUE(registry().add(std::make_unique<ConstantSource>()).ok());
}

TEST(DatasetSourceRegistry, WireNamesFindTheirKind) {
  const auto& r = DatasetSourceRegistry::global();
  EXPECT_EQ(r.for_wire("none").value(), nullptr);
  EXPECT_EQ(r.for_wire("inline").value()->key(), "values");
  EXPECT_EQ(r.for_wire("path").value()->key(), "path");
  EXPECT_EQ(r.for_wire("chunks").value()->key(), "upload");
  EXPECT_EQ(r.for_wire("cached").value()->key(), "upload");
  EXPECT_EQ(r.for_wire("generate").value()->key(), "generate");
  EXPECT_EQ(r.for_wire("http").status().message(), "unknown source 'http'");
  EXPECT_EQ(r.field("x", "chunks").delivery, RowDelivery::kChunks);
  EXPECT_EQ(r.field("x", "cached").delivery, RowDelivery::kCached);
  EXPECT_EQ(r.field("x", "none").source, nullptr);
}

// Each built-in kind writes the same run_start keys as before kinds had
// files of their own, and reads them back.
TEST(DatasetSourceRegistry, BuiltInKindsKeepTheirWireKeys) {
  const auto& r = DatasetSourceRegistry::global();
  RunStartMsg start;
  start.fields = {r.field("a", "inline"), r.field("b", "path"),   r.field("c", "generate"),
                  r.field("d", "chunks"), r.field("e", "cached"), r.field("f", "none")};
  start.fields[0].offset = 8;
  start.fields[0].bytes = 16;
  start.fields[1].path = "/data/x.npy";
  start.fields[1].format = "npy";
  start.fields[2].kernel = "fill";
  start.fields[3].upload = start.fields[4].upload = "u1";
  const json fields = start.to_message().header["fields"];
  EXPECT_EQ(fields[0], (json{{"name", "a"}, {"source", "inline"}, {"offset", 8}, {"bytes", 16}}));
  EXPECT_EQ(fields[1],
            (json{{"name", "b"}, {"source", "path"}, {"path", "/data/x.npy"}, {"format", "npy"}}));
  EXPECT_EQ(fields[2], (json{{"name", "c"}, {"source", "generate"}, {"kernel", "fill"}}));
  EXPECT_EQ(fields[3], (json{{"name", "d"}, {"source", "chunks"}, {"upload", "u1"}}));
  EXPECT_EQ(fields[4], (json{{"name", "e"}, {"source", "cached"}, {"upload", "u1"}}));
  EXPECT_EQ(fields[5], (json{{"name", "f"}, {"source", "none"}}));

  auto back = RunStartMsg::parse(start.to_message().header);
  ASSERT_TRUE(back.ok()) << back.status().message();
  const std::vector<RowDelivery> how = {RowDelivery::kRows,      RowDelivery::kFile,
                                        RowDelivery::kGenerator, RowDelivery::kChunks,
                                        RowDelivery::kCached,    RowDelivery::kNone};
  for (size_t k = 0; k < how.size(); ++k) EXPECT_EQ(back->fields[k].delivery, how[k]) << k;
  EXPECT_EQ(back->fields[0].bytes, 16u);
  EXPECT_EQ(back->fields[1].path, "/data/x.npy");
  EXPECT_EQ(back->fields[2].kernel, "fill");
  EXPECT_EQ(back->fields[4].upload, "u1");
}

TEST(DatasetSourceRegistry, MalformedWireFieldsAreErrors) {
  json h = RunStartMsg{}.to_message().header;
  h["fields"] = json::array({{{"name", "x"}, {"source", "path"}, {"path", 3}}});
  EXPECT_EQ(RunStartMsg::parse(h).status().message(),
            "run_start: field \"fields\"[0]: path is not a string");
  h["fields"] = json::array({{{"name", "x"}, {"source", "http"}}});
  EXPECT_EQ(RunStartMsg::parse(h).status().message(),
            "run_start: field \"fields\"[0]: unknown source 'http'");
}

// The inline kind slices each part's rows out of the payload, and says when
// the payload is short.
TEST(DatasetSourceRegistry, InlineRowsComeFromThePayload) {
  const auto& r = DatasetSourceRegistry::global();
  SourceField field{"dataset field 'x'", DType::kInt32, 1, {}};
  auto parsed = r.parse(json{{"values", {1, 2, 3, 4}}}, field, {});
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->rows, 4);
  FieldSource f;
  std::string payload = "pad.";
  ASSERT_TRUE(parsed->source->to_wire(*parsed, {1, 2, 4, false}, &f, &payload).ok());
  EXPECT_EQ(f.offset, 4u);
  EXPECT_EQ(f.bytes, 8u);
  auto rows = parsed->source->part_rows(f, {payload, 4, 4, DType::kInt32});
  ASSERT_TRUE(rows.ok());
  int32_t v = 0;
  std::memcpy(&v, rows->data(), 4);
  EXPECT_EQ(v, 3);
  EXPECT_EQ(parsed->source->part_rows(f, {payload, 8, 4, DType::kInt32}).status().message(),
            "run_start: inline rows exceed the payload");
}

TEST(DatasetSourceRegistry, UploadRowsAreKeptUnderTheUploadsId) {
  TempDir dir;
  const std::string path = dir.write("u7.raw", std::string(12, '\0'));
  SourceContext context;
  context.uploads = [&](const std::string& id) -> Result<std::pair<std::string, FileFormat>> {
    if (id != "u7") return not_found("no upload " + id);
    return std::make_pair(path, FileFormat::kRaw);
  };
  const auto& r = DatasetSourceRegistry::global();
  SourceField field{"dataset field 'x'", DType::kFloat32, 1, {}};
  auto parsed = r.parse(json{{"upload", "u7"}}, field, context);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->rows, 3);
  EXPECT_EQ(parsed->row_source, "u7:");
  EXPECT_EQ(parsed->source->delivery(), RowDelivery::kCached);
  FieldSource f;
  ASSERT_TRUE(parsed->source->to_wire(*parsed, {0, 3, 4, true}, &f, nullptr).ok());
  EXPECT_EQ(f.delivery, RowDelivery::kChunks);
  EXPECT_EQ(f.upload, "u7");
}

}  // namespace
}  // namespace lizard
