#include "protocol/wire.h"

#include <gtest/gtest.h>

namespace lizard {
namespace {

TEST(Wire, RoundTripsHeaderAndBinaryPayload) {
  Message m{
      MessageType::kRunEnd, {{"run_id", "r1"}, {"outputs", {"x"}}}, std::string("\0\1\2\xff", 4)};
  auto d = decode(encode(m));
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->type, MessageType::kRunEnd);
  EXPECT_EQ(d->header["run_id"], "r1");
  EXPECT_EQ(d->header["outputs"][0], "x");
  EXPECT_EQ(d->payload, m.payload);
  EXPECT_TRUE(d->packed.empty());
}

TEST(Wire, APackedHeaderCrossesAsItsBytesAndIsNotParsedAsJson) {
  // Not JSON: a frame of a per-iteration type keeps its header bytes as they are.
  const std::string packed("\x02\0\0\0\0\0\0\0r1\x05", 11);
  Message m{MessageType::kIterate, nlohmann::json::object(), "state", packed};
  const std::string frame = encode(m);
  EXPECT_EQ(frame.size(), 8 + packed.size() + 5);
  auto v = decode_view(frame);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->packed, packed);
  EXPECT_EQ(v->payload, "state");
  EXPECT_TRUE(v->header.empty());
  auto d = decode(frame);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->packed, packed);
  EXPECT_EQ(encode(d.value()), frame);
  EXPECT_TRUE(has_packed_header(MessageType::kIterationResult));
  EXPECT_TRUE(has_packed_header(MessageType::kLoopStep));
  EXPECT_FALSE(has_packed_header(MessageType::kRunStart));
}

TEST(Wire, AFrameIsItsEmptyPayloadEncodingThenThePayload) {
  const std::string rows("\x10\x20\x00\x30", 4);
  const std::string frame = encode(Message{MessageType::kDataChunk, {{"field", 1}}, ""}) + rows;
  EXPECT_EQ(frame, encode(Message{MessageType::kDataChunk, {{"field", 1}}, rows}));
  auto v = decode_view(frame);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->header["field"], 1);
  EXPECT_EQ(v->payload, rows);
  EXPECT_EQ(v->payload.data(), frame.data() + frame.size() - rows.size());
}

TEST(Wire, RejectsMalformedFrames) {
  EXPECT_FALSE(decode("").ok());
  EXPECT_FALSE(decode("XX\1\7\0\0\0\0").ok());
  std::string f = encode(Message{MessageType::kHello, {{"a", 1}}, ""});
  std::string bad_version = f;
  bad_version[2] = 9;
  EXPECT_NE(decode(bad_version).status().message().find("wire version 9"), std::string::npos);
  std::string bad_type = f;
  bad_type[3] = 99;
  EXPECT_FALSE(decode(bad_type).ok());
  std::string truncated = f.substr(0, f.size() - 2);
  EXPECT_FALSE(decode(truncated).ok());
  std::string not_object = encode(Message{MessageType::kHello, nlohmann::json::object(), ""});
  not_object.replace(8, 2, "[]");
  EXPECT_FALSE(decode(not_object).ok());
}

// The type comes from the first bytes: a header that does not parse still
// has one, and a frame decode() rejects for its first bytes has none.
TEST(Wire, FrameTypeReadsTheFirstBytesOnly) {
  std::string f = encode(Message{MessageType::kLoop, {{"run_id", "r1.0"}}, "state"});
  ASSERT_TRUE(frame_type(f).ok());
  EXPECT_EQ(*frame_type(f), MessageType::kLoop);
  f.replace(8, 2, "[]");  // no longer a JSON object
  EXPECT_FALSE(decode(f).ok());
  ASSERT_TRUE(frame_type(f).ok());
  EXPECT_EQ(*frame_type(f), MessageType::kLoop);
  EXPECT_FALSE(frame_type("XX\1\7\0\0\0\0").ok());
  std::string bad_version = f;
  bad_version[2] = 9;
  EXPECT_EQ(frame_type(bad_version).status().message(), decode(bad_version).status().message());
  std::string bad_type = f;
  bad_type[3] = 99;
  EXPECT_FALSE(frame_type(bad_type).ok());
}

}  // namespace
}  // namespace lizard
