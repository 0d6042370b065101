#include "client/run_output.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lizard {
namespace {

// The log_chunks a RunOutput sent.
std::vector<LogChunkMsg> chunks_of(const std::vector<std::string>& frames) {
  std::vector<LogChunkMsg> out;
  for (const auto& f : frames) {
    auto v = decode_view(f);
    EXPECT_TRUE(v.ok());
    EXPECT_EQ(v->type, MessageType::kLogChunk);
    auto m = LogChunkMsg::parse(v->header);
    EXPECT_TRUE(m.ok()) << m.status().message();
    out.push_back(*m);
  }
  return out;
}

TEST(RunOutput, EachFlushSendsTheLinesSinceTheLastTaggedByExecutorAndIteration) {
  std::vector<std::string> frames;
  RunOutput out;
  out.bind("r4.0", [&](std::string f) { frames.push_back(std::move(f)); });
  out.flush();  // nothing printed: nothing sent
  EXPECT_TRUE(frames.empty());
  out.add(0, 3, {"hello\nwor", 0});
  out.add(1, 3, {"ld\n", 0});
  out.flush();
  out.add(-1, 3, {"hook", 0});
  out.finish();
  auto chunks = chunks_of(frames);
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0].run_id, "r4.0");
  ASSERT_EQ(chunks[0].lines.size(), 3u);
  EXPECT_EQ(chunks[0].lines[0].text, "hello");
  EXPECT_EQ(chunks[0].lines[1].text, "wor");  // each take ends its lines
  EXPECT_EQ(chunks[0].lines[1].executor, 0);
  EXPECT_EQ(chunks[0].lines[2].executor, 1);
  EXPECT_EQ(chunks[0].lines[2].iteration, 3);
  ASSERT_EQ(chunks[1].lines.size(), 1u);
  EXPECT_EQ(chunks[1].lines[0].executor, -1);
  EXPECT_EQ(chunks[1].cut_lines, 0u);
}

TEST(RunOutput, PastTheBoundLinesAreCountedAndTheLastChunkSaysSo) {
  std::vector<std::string> frames;
  RunOutput out;
  out.bind("r1.0", [&](std::string f) { frames.push_back(std::move(f)); });
  const std::string line = std::string(1023, 'x') + "\n";
  std::string printed;
  for (int i = 0; i < 1030; ++i) printed += line;
  out.add(0, 0, {printed, 100});
  out.finish();
  auto chunks = chunks_of(frames);
  ASSERT_FALSE(chunks.empty());
  size_t lines = 0;
  for (const auto& c : chunks) lines += c.lines.size();
  EXPECT_EQ(lines, 1024u);
  EXPECT_EQ(chunks.back().cut_lines, 7u);  // 6 lines, and the bytes the pipe dropped
  EXPECT_EQ(chunks.back().cut_bytes, 6u * 1024 + 100);
  for (const auto& f : frames) EXPECT_LT(f.size(), size_t{300} << 10);
}

}  // namespace
}  // namespace lizard
