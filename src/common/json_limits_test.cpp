#include "common/json_limits.h"

#include <gtest/gtest.h>

#include <string>

namespace lizard {
namespace {

std::string nested(int depth) {
  return std::string(static_cast<size_t>(depth), '[') + "1" +
         std::string(static_cast<size_t>(depth), ']');
}

TEST(JsonLimitsTest, CountsNestingOutsideStrings) {
  EXPECT_EQ(json_nesting_depth("1"), 0);
  EXPECT_EQ(json_nesting_depth(R"({"a": [1, {"b": []}]})"), 4);
  EXPECT_EQ(json_nesting_depth(R"({"a": "[[[[\"[[["})"), 1);
  EXPECT_EQ(json_nesting_depth(nested(10)), 10);
}

TEST(JsonLimitsTest, AcceptsBodiesUpToTheLimit) {
  auto j = parse_json_bounded(nested(kMaxJsonDepth));
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_TRUE(j->is_array());
}

TEST(JsonLimitsTest, RefusesDeepBodiesQuickly) {
  // 100,000 levels: refused from the scan, long before a parser could recurse.
  std::string deep = R"({"dataset": {"x": {"values": )" + nested(100000) + "}}}";
  auto j = parse_json_bounded(deep);
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(j.status().message(), "request body nests arrays or objects more than 64 levels deep");
  EXPECT_FALSE(parse_json_bounded(nested(kMaxJsonDepth + 1)).ok());
}

TEST(JsonLimitsTest, RefusesInvalidJson) {
  auto j = parse_json_bounded("{\"a\": ", "manifest");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().message(), "manifest is not valid JSON");
}

TEST(JsonLimitsTest, RefusesDuplicateKeysNamingThem) {
  auto top = parse_json_bounded(R"({"params": {}, "params": {"k": 1}})");
  ASSERT_FALSE(top.ok());
  EXPECT_EQ(top.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(top.status().message(), "request body: duplicate key 'params'");
  auto inner = parse_json_bounded(R"({"params": {"k": 1, "dims": 2, "k": 3}})");
  ASSERT_FALSE(inner.ok());
  EXPECT_EQ(inner.status().message(), "request body: duplicate key 'k'");
  // The same key in sibling objects is no repetition.
  auto siblings = parse_json_bounded(R"([{"k": 1}, {"k": 2}, {"a": {"k": 3}, "k": 4}])");
  ASSERT_TRUE(siblings.ok()) << siblings.status().message();
  EXPECT_EQ((*siblings)[2]["k"], 4);
}

TEST(JsonLimitsTest, ParsesLikeNlohmann) {
  const std::string text = R"({"a": [1, -2, 3.5, "x", true, null, {}], "b": {"c": []}})";
  auto j = parse_json_bounded(text);
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_EQ(*j, nlohmann::json::parse(text));
  EXPECT_FALSE(parse_json_bounded("{} x").ok());
  EXPECT_FALSE(parse_json_bounded("").ok());
}

}  // namespace
}  // namespace lizard
