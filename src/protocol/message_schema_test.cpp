// Every message with a JSON header survives encoding and decoding as its
// schema lists it, refuses a header without a required field by naming the
// message and the field, and ignores keys it does not know.
#include "protocol/message_schema.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "protocol/message_schemas.h"
#include "protocol/wire_samples.h"

namespace lizard {
namespace {

using nlohmann::json;
using wire_schema::Presence;

// The sample's header of `type` (wire_samples.h), null when there is none.
json sample_header(MessageType type) {
  for (const WireSample& s : wire_samples())
    if (s.message.type == type) return s.message.header;
  return nullptr;
}

TEST(WireMessages, EveryTypeHasASample) {
  std::set<MessageType> sampled;
  for (const WireSample& s : wire_samples()) sampled.insert(s.message.type);
  for (int n = 1; n < 256; ++n) {
    const auto t = static_cast<MessageType>(n);
    if (std::string(message_type_name(t)) != "unknown") {
      EXPECT_TRUE(sampled.count(t)) << message_type_name(t);
    }
  }
}

// Encode → frame → decode → parse → encode gives the same header, and the
// sample sets every field to a value other than its default, so a field the
// decoder dropped would show.
TEST(WireMessages, EveryMessageRoundTrips) {
  int schemas = 0;
  for_each_message_schema([&](auto tag) {
    using S = typename decltype(tag)::type;
    using M = typename S::Type;
    ++schemas;
    SCOPED_TRACE(S::kName);
    const json header = sample_header(S::kType);
    ASSERT_TRUE(header.is_object());
    const json defaults = to_header(M{});
    for (const auto& f : wire_schema::describe_fields<S>()) {
      ASSERT_TRUE(header.contains(f.name)) << f.name;
      EXPECT_NE(header[f.name], defaults.value(f.name, json())) << f.name << " is its default";
    }
    auto frame = decode(encode(Message{S::kType, header, "payload"}));
    ASSERT_TRUE(frame.ok()) << frame.status().message();
    Result<M> back = M::parse(frame->header);
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(to_header(*back), header);
    EXPECT_EQ(frame->payload, "payload");
  });
  EXPECT_EQ(schemas,
            24);  // every type but the packed iterate, iteration_result, loop_step and heartbeat
}

TEST(WireMessages, AMissingRequiredFieldIsNamed) {
  for_each_message_schema([&](auto tag) {
    using S = typename decltype(tag)::type;
    using M = typename S::Type;
    for (const auto& f : wire_schema::describe_fields<S>()) {
      json header = sample_header(S::kType);
      header.erase(f.name);
      Result<M> back = M::parse(header);
      if (f.presence == Presence::kRequired) {
        ASSERT_FALSE(back.ok()) << S::kName << "." << f.name;
        EXPECT_EQ(back.status().message(),
                  std::string(S::kName) + ": missing required field \"" + f.name + "\"");
      } else {
        EXPECT_TRUE(back.ok()) << S::kName << "." << f.name << ": " << back.status().message();
      }
    }
  });
}

TEST(WireMessages, UnknownFieldsAreIgnored) {
  for_each_message_schema([&](auto tag) {
    using S = typename decltype(tag)::type;
    using M = typename S::Type;
    const json header = sample_header(S::kType);
    json extended = header;
    extended["added_in_a_later_version"] = {{"x", 1}};
    Result<M> back = M::parse(extended);
    ASSERT_TRUE(back.ok()) << S::kName << ": " << back.status().message();
    EXPECT_EQ(to_header(*back), header) << S::kName;
  });
}

// A reply without `ok` is an error, never a success.
TEST(WireMessages, AReplyWithoutOkIsRefused) {
  EXPECT_EQ(RunReadyMsg::parse({{"run_id", "r1.0"}}).status().message(),
            "run_ready: missing required field \"ok\"");
  EXPECT_EQ(
      RunOutputsMsg::parse({{"run_id", "r1.0"}, {"fields", json::array()}}).status().message(),
      "run_outputs: missing required field \"ok\"");
  EXPECT_EQ(ProgramStatusMsg::parse({{"hash", "ab"}}).status().message(),
            "program_status: missing required field \"ok\"");
  EXPECT_EQ(RowsStagedMsg::parse({{"stage_id", "s"}, {"parts", json::array()}}).status().message(),
            "rows_staged: missing required field \"ok\"");
  // null reads as absent
  EXPECT_FALSE(RunReadyMsg::parse({{"run_id", "r1.0"}, {"ok", nullptr}}).ok());
}

TEST(WireMessages, AFieldOfTheWrongTypeIsNamed) {
  EXPECT_EQ(RunReadyMsg::parse({{"run_id", "r1.0"}, {"ok", "yes"}}).status().message(),
            "run_ready: field \"ok\" is not a boolean");
  json start = sample_header(MessageType::kRunStart);
  start["parts"][1].erase("rows");
  EXPECT_EQ(RunStartMsg::parse(start).status().message(),
            "run_start: field \"parts\"[1]: missing required field \"rows\"");
  start = sample_header(MessageType::kRunStart);
  start["data_roots"] = {"/a", 3};
  EXPECT_EQ(RunStartMsg::parse(start).status().message(),
            "run_start: field \"data_roots\"[1] is not a string");
  start["parts"][0]["rows"] = -1;
  EXPECT_FALSE(RunStartMsg::parse(start).ok());
  EXPECT_EQ(ProgressMsg::parse(json::array()).status().message(),
            "progress: header is not an object");
}

TEST(WireMessages, AHelloWithoutAVersionSpeaksTheFramesVersion) {
  json h = sample_header(MessageType::kHello);
  h.erase("protocol");
  auto back = HelloMsg::parse(h);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->protocol, kWireVersion);
}

// A worker goes on only with a server of its own version that took it.
TEST(WireMessages, AWelcomeOfAnotherVersionOrARefusalIsNotAccepted) {
  EXPECT_TRUE(accept_welcome(WelcomeMsg{"w1"}).ok());
  Status other = accept_welcome(WelcomeMsg{"w1", kWireVersion + 1});
  EXPECT_EQ(other.code(), Code::kPermissionDenied);
  EXPECT_EQ(other.message(), "the server speaks wire protocol version " +
                                 std::to_string(kWireVersion + 1) + ", this worker version " +
                                 std::to_string(kWireVersion));
  Status refused = accept_welcome(WelcomeMsg{"", kWireVersion, "version 9 here"});
  EXPECT_EQ(refused.message(), "the server refused this worker: version 9 here");
  // A welcome frame of another version is read as far as every version agrees.
  std::string frame = encode(WelcomeMsg{"w1"}.to_message());
  frame[2] = static_cast<char>(kWireVersion + 1);
  EXPECT_FALSE(decode(frame).ok());
  EXPECT_EQ(accept_welcome_frame(frame).message(), other.message());
  EXPECT_EQ(accept_welcome_frame(encode(HelloMsg{}.to_message())).code(), Code::kInvalidArgument);
}

// The packed layouts the reference page shows are the ones write() puts:
// reading each sample's packed header through its layout uses every byte.
template <size_t N>
void read_by_layout(const PackedField (&layout)[N], const std::string& packed) {
  ByteReader r(packed);
  for (const PackedField& f : layout) {
    switch (f.type) {
      case PackedType::kString:
        r.bytes();
        break;
      case PackedType::kInt64:
        r.i64();
        break;
      case PackedType::kDouble:
        r.f64();
        break;
      case PackedType::kFlag:
        EXPECT_LE(r.u8(), 1) << f.name;
        break;
    }
  }
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.left(), 0u);
}

TEST(WireMessages, PackedLayoutsMatchTheEncoding) {
  int read = 0;
  for (const WireSample& s : wire_samples()) {
    SCOPED_TRACE(s.name);
    if (s.message.type == MessageType::kIterate) read_by_layout(kIterateLayout, s.message.packed);
    if (s.message.type == MessageType::kIterationResult)
      read_by_layout(kIterationResultLayout, s.message.packed);
    if (s.message.type == MessageType::kLoopStep) read_by_layout(kLoopStepLayout, s.message.packed);
    read += has_packed_header(s.message.type);
  }
  EXPECT_EQ(read, 5);  // iterate, loop_step and three iteration_results
}

}  // namespace
}  // namespace lizard
