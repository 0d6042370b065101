// RunSpec and PartitionSpec cross both hops (server → worker in run_start,
// worker → executor in begin_run) through their one codec, every RunValues
// member with them.
#include "protocol/run_spec.h"

#include <gtest/gtest.h>

#include "protocol/messages.h"

namespace lizard {
namespace {

// Distinct values for every member of RunValues.
RunValues sample_values() {
  RunValues v;
  uint64_t x = 0x0123456789abcdefULL;
  for (const RunValueMember& m : run_value_members()) v.*m.member = x++;
  return v;
}

void expect_same_values(const RunValues& a, const RunValues& b) {
  for (const RunValueMember& m : run_value_members()) EXPECT_EQ(a.*m.member, b.*m.member) << m.name;
}

TEST(RunSpec, CrossesRunStartWithEveryRunValue) {
  RunStartMsg m;
  static_cast<RunValues&>(m) = sample_values();
  m.hash = "abc";
  m.params = {{"k", 4}};
  m.data_roots = {"/data"};
  m.files = {{"x", "/data/x.npy", {1, 2, 4096, 1700000000000000001, 1700000000000000002}, ""}};
  m.progress = true;
  FieldSource f;
  f.name = "x";
  m.fields.push_back(f);
  m.run_id = "r1.0";
  m.first_row = 10;
  m.rows = 5;
  m.parts.push_back({0, 10, 5});
  auto view = decode_view(encode(m.to_message("payload")));
  ASSERT_TRUE(view.ok()) << view.status().message();
  auto back = RunStartMsg::parse(view->header);
  ASSERT_TRUE(back.ok()) << back.status().message();
  expect_same_values(back.value(), m);
  EXPECT_EQ(back->hash, "abc");
  EXPECT_EQ(back->params, (nlohmann::json{{"k", 4}}));
  EXPECT_EQ(back->data_roots, std::vector<std::string>{"/data"});
  ASSERT_EQ(back->files.size(), 1u);
  EXPECT_EQ(back->files[0].field, "x");
  EXPECT_EQ(back->files[0].path, "/data/x.npy");
  EXPECT_EQ(back->files[0].identity, m.files[0].identity);
  EXPECT_TRUE(back->progress);
  ASSERT_EQ(back->fields.size(), 1u);
  EXPECT_EQ(back->fields[0].name, "x");
  EXPECT_EQ(back->run_id, "r1.0");
  EXPECT_EQ(back->first_row, 10);
  EXPECT_EQ(back->rows, 5);
  ASSERT_EQ(back->parts.size(), 1u);
  EXPECT_EQ(back->parts[0].first_row, 10);
}

TEST(RunSpec, RunStartKeepsItsJsonNames) {
  RunStartMsg m;
  m.run_id = "r1.0";
  m.hash = "abc";
  m.generate_seed = 9;
  const nlohmann::json h = m.to_message().header;
  for (const char* key : {"run_id", "hash", "params", "seed", "first_row", "rows", "parts",
                          "fields", "data_roots", "progress"})
    EXPECT_TRUE(h.contains(key)) << key;
  EXPECT_EQ(h["seed"], 9);
  // A run_start of an older server, without the values added since, reads with 0s.
  auto old = RunStartMsg::parse({{"run_id", "r1.0"}, {"hash", "abc"}, {"seed", 3}});
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_EQ(old->generate_seed, 3u);
}

TEST(RunSpec, ARunStartWithoutItsProgramOrWithABadValueIsRefused) {
  EXPECT_FALSE(RunStartMsg::parse({{"run_id", "r1.0"}}).ok());
  auto bad = RunStartMsg::parse({{"run_id", "r1.0"}, {"hash", "abc"}, {"seed", -1}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("\"seed\""), std::string::npos) << bad.status().message();
}

TEST(PartitionSpec, SurvivesItsCodecWithEveryRunValue) {
  PartitionSpec p;
  static_cast<RunValues&>(p) = sample_values();
  p.first_row = 4096;
  p.rows = 100;
  p.generators = {"blobs", "noise"};
  auto back = decode_partition_spec(encode_partition_spec(p));
  ASSERT_TRUE(back.ok()) << back.status().message();
  expect_same_values(back.value(), p);
  EXPECT_EQ(back->first_row, 4096);
  EXPECT_EQ(back->rows, 100);
  EXPECT_EQ(back->generators, (std::vector<std::string>{"blobs", "noise"}));
}

TEST(PartitionSpec, BadTextIsAnErrorNotAnException) {
  EXPECT_FALSE(decode_partition_spec("").ok());
  EXPECT_FALSE(decode_partition_spec("{\"rows\": ").ok());
  EXPECT_FALSE(decode_partition_spec("[1]").ok());
  auto negative = decode_partition_spec(R"({"first_row": 0, "rows": -1})");
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("partition_spec"), std::string::npos);
}

}  // namespace
}  // namespace lizard
