// The resources message: free memory and load per executor, with values a
// worker could not measure travelling as null.
#include <gtest/gtest.h>

#include "protocol/messages.h"

namespace lizard {
namespace {

using nlohmann::json;

TEST(ResourcesMsg, CarriesLoadWithUnmeasuredValuesAsNull) {
  ResourcesMsg m;
  m.free_memory = {1000, 2000};
  m.utilization = {37.0, -1};
  m.launch_delay_us = {-1, 8.5};
  Message wire = m.to_message();
  EXPECT_EQ(wire.header["utilization"], json::parse("[37.0, null]"));
  EXPECT_EQ(wire.header["launch_delay_us"], json::parse("[null, 8.5]"));
  auto back = ResourcesMsg::parse(wire.header);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->free_memory, m.free_memory);
  EXPECT_EQ(back->utilization, m.utilization);
  EXPECT_EQ(back->launch_delay_us, m.launch_delay_us);
}

TEST(ResourcesMsg, CarriesTheRowsEachExecutorKeeps) {
  ResourcesMsg m;
  m.free_memory = {1, 2};
  m.kept = {{{"file:1:2:3:4:npy:float32x8:0+16", "/d/x.npy rows 0..16 (float32 x 8)", 512}}, {}};
  auto back = ResourcesMsg::parse(m.to_message().header);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->kept, m.kept);
  // An older worker reports none; a malformed list is refused.
  auto older = ResourcesMsg::parse(json::parse(R"({"free_memory": [1]})"));
  ASSERT_TRUE(older.ok()) << older.status().message();
  EXPECT_TRUE(older->kept.empty());
  EXPECT_FALSE(ResourcesMsg::parse(json{{"free_memory", {1}}, {"kept", {{{{"bytes", -1}}}}}}).ok());
}

TEST(ResourcesMsg, AWorkerWithoutTelemetrySendsFreeMemoryAlone) {
  ResourcesMsg m;
  m.free_memory = {5};
  Message wire = m.to_message();
  EXPECT_FALSE(wire.header.contains("utilization"));
  EXPECT_FALSE(wire.header.contains("launch_delay_us"));
  auto back = ResourcesMsg::parse(wire.header);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->utilization.empty());
}

TEST(ResourcesMsg, RejectsNegativeOrNonNumericLoad) {
  for (const char* bad : {R"({"free_memory": [1], "utilization": [-3]})",
                          R"({"free_memory": [1], "launch_delay_us": ["fast"]})",
                          R"({"free_memory": [1], "utilization": 5})"}) {
    auto m = ResourcesMsg::parse(json::parse(bad));
    EXPECT_FALSE(m.ok()) << bad;
  }
}

TEST(ExecutorInfo, LoadAppearsOnlyWhenMeasured) {
  ExecutorInfo cpu;
  cpu.kind = "cpu";
  json j = cpu.to_json();
  EXPECT_FALSE(j.contains("utilization"));
  EXPECT_FALSE(j.contains("launch_delay_us"));
  ExecutorInfo gpu;
  gpu.kind = "cuda";
  gpu.utilization = 12;
  gpu.launch_delay_us = 7.25;
  ExecutorInfo back = ExecutorInfo::from_json(gpu.to_json());
  EXPECT_EQ(back.utilization, 12);
  EXPECT_EQ(back.launch_delay_us, 7.25);
  EXPECT_EQ(ExecutorInfo::from_json(j).utilization, -1);
}

}  // namespace
}  // namespace lizard
