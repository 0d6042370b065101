// The messages that stage and drop kept rows outside runs: each survives
// its trip through a header, a malformed header is refused with the field
// it lacks, and a resources report carries each kept row's source and range.
#include "protocol/staging_messages.h"

#include <gtest/gtest.h>

#include "protocol/messages.h"

namespace lizard {
namespace {

using nlohmann::json;

TEST(StagingMessages, StageRowsRoundTrips) {
  StageRowsMsg m{"stage-1", "/data/x.npy", "npy", "float64", 8, {"/data"}, {{0, 0, 10}, {1, 10, 5}},
                 "9f2c41d0"};
  Message wire = m.to_message();
  EXPECT_EQ(wire.type, MessageType::kStageRows);
  auto back = StageRowsMsg::parse(wire.header);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->stage_id, "stage-1");
  EXPECT_EQ(back->path, "/data/x.npy");
  EXPECT_EQ(back->dtype, "float64");
  EXPECT_EQ(back->width, 8);
  EXPECT_EQ(back->program, "9f2c41d0");
  EXPECT_EQ(back->data_roots, std::vector<std::string>{"/data"});
  ASSERT_EQ(back->parts.size(), 2u);
  EXPECT_EQ(back->parts[1].executor, 1);
  EXPECT_EQ(back->parts[1].first_row, 10);
  EXPECT_EQ(back->parts[1].rows, 5);
}

TEST(StagingMessages, RowsStagedRoundTrips) {
  RowsStagedMsg m{"stage-2", true, "", {{0, 0, 4, 128, "file:1:2:3:4:npy:float64x4:0+4", true}}};
  auto back = RowsStagedMsg::parse(m.to_message().header);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(back->ok);
  ASSERT_EQ(back->parts.size(), 1u);
  EXPECT_EQ(back->parts[0].bytes, 128u);
  EXPECT_EQ(back->parts[0].key, "file:1:2:3:4:npy:float64x4:0+4");
  EXPECT_TRUE(back->parts[0].was_kept);
  RowsStagedMsg failed{"stage-3", false, "no such file", {}};
  auto f = RowsStagedMsg::parse(failed.to_message().header);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_FALSE(f->ok);
  EXPECT_EQ(f->error, "no such file");
}

TEST(StagingMessages, MalformedHeadersAreRefused) {
  json h = StageRowsMsg{"s", "/x", "raw", "int32", 1, {}, {{0, 0, 1}}}.to_message().header;
  json no_path = h;
  no_path.erase("path");
  EXPECT_EQ(StageRowsMsg::parse(no_path).status().message(),
            "stage_rows: missing required field \"path\"");
  json zero_width = h;
  zero_width["width"] = 0;
  EXPECT_FALSE(StageRowsMsg::parse(zero_width).ok());
  json negative = h;
  negative["parts"][0]["rows"] = -1;
  EXPECT_FALSE(StageRowsMsg::parse(negative).ok());
  EXPECT_FALSE(StageRowsMsg::parse(json::array()).ok());
  EXPECT_FALSE(RowsStagedMsg::parse(json{{"stage_id", "s"}}).ok());
}

TEST(StagingMessages, DropRowsNamesItsSource) {
  auto back = DropRowsMsg::parse(DropRowsMsg{"u0123456789ab"}.to_message().header);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->source, "u0123456789ab");
  EXPECT_FALSE(DropRowsMsg::parse(json{{"source", ""}}).ok());
  EXPECT_EQ(message_type_name(MessageType::kDropRows), std::string("drop_rows"));
}

TEST(StagingMessages, ResourcesCarryTheSourceAndRangeOfKeptRows) {
  ResourcesMsg m;
  m.free_memory = {1};
  m.kept = {{{"file:k", "/d/x.npy rows 8..16 (float32 x 2)", 64, "/d/x.npy", 8, 8}}};
  Message wire = m.to_message();
  EXPECT_EQ(wire.header["kept"][0][0]["rows"], json({8, 16}));
  auto back = ResourcesMsg::parse(wire.header);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->kept, m.kept);
  json bad = wire.header;
  bad["kept"][0][0]["rows"] = {16, 8};
  EXPECT_FALSE(ResourcesMsg::parse(bad).ok());
}

}  // namespace
}  // namespace lizard
