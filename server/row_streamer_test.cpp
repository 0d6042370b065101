#include "server/row_streamer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "dataset/npy.h"
#include "server/testing/fakes.h"

namespace lizard {
namespace {

using testing::FakeWorkerLink;

constexpr int kRows = 100, kWidth = 3;
constexpr size_t kRowBytes = kWidth * sizeof(float);

class RowStreamerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < kRows * kWidth; ++i) values_.push_back(static_cast<float>(i) * 0.5f);
    source_.path = dir_.path("rows.npy");
    source_.format = FileFormat::kNpy;
    source_.width = kWidth;
    std::ofstream(source_.path, std::ios::binary)
        << npy_bytes(DType::kFloat32, {kRows, kWidth}, values_.data());
  }

  std::string rows(int64_t first, int64_t count) const {
    return std::string(reinterpret_cast<const char*>(values_.data()) + first * kRowBytes,
                       static_cast<size_t>(count) * kRowBytes);
  }

  TempDir dir_;
  ParsedSource source_;
  std::vector<float> values_;
};

TEST_F(RowStreamerTest, RowsGoOutAsChunksThatAddUpToTheRange) {
  FakeWorkerLink link;
  RowStreamOptions opts;
  opts.chunk_bytes = 7 * kRowBytes;
  ASSERT_TRUE(stream_upload_rows(link, "r4.1", 2, source_, DType::kFloat32, 10, 50, opts).ok());
  auto sent = link.sent();
  ASSERT_EQ(sent.size(), 8u);  // 7 chunks of 7 rows and one of 1
  std::string joined;
  for (const auto& m : sent) {
    ASSERT_EQ(m.type, MessageType::kDataChunk);
    auto c = DataChunkMsg::parse(m.header).value();
    EXPECT_EQ(c.run_id, "r4.1");
    EXPECT_EQ(c.field, 2u);
    EXPECT_EQ(c.offset, joined.size());
    EXPECT_EQ(c.bytes, m.payload.size());
    EXPECT_EQ(c.total, 50 * kRowBytes);  // the worker sizes its buffer once
    joined += m.payload;
  }
  EXPECT_EQ(joined, rows(10, 50));
}

TEST_F(RowStreamerTest, AChunkHoldsAtLeastOneRow) {
  FakeWorkerLink link;
  RowStreamOptions opts;
  opts.chunk_bytes = 1;
  ASSERT_TRUE(stream_upload_rows(link, "r1.0", 0, source_, DType::kFloat32, 98, 2, opts).ok());
  auto sent = link.sent();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[1].payload, rows(99, 1));
}

TEST_F(RowStreamerTest, NothingIsSentWhileTheLinkHasTooMuchQueued) {
  FakeWorkerLink link;
  link.set_queued_bytes(1000);
  RowStreamOptions opts;
  opts.chunk_bytes = 10 * kRowBytes;
  opts.max_queued = 100;
  std::thread streamer([&] {
    EXPECT_TRUE(stream_upload_rows(link, "r1.0", 0, source_, DType::kFloat32, 0, 30, opts).ok());
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(link.frames(), 0u);
  link.set_queued_bytes(0);
  streamer.join();
  EXPECT_EQ(link.frames(), 3u);
}

TEST_F(RowStreamerTest, RowsOutsideTheFileAreAnErrorAndNothingIsSent) {
  FakeWorkerLink link;
  Status st = stream_upload_rows(link, "r1.0", 0, source_, DType::kFloat32, 90, 20);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(link.frames(), 0u);
}

TEST_F(RowStreamerTest, AMissingFileIsAnError) {
  FakeWorkerLink link;
  source_.path = dir_.path("gone.npy");
  Status st = stream_upload_rows(link, "r1.0", 0, source_, DType::kFloat32, 0, 1);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("gone.npy"), std::string::npos) << st.message();
  EXPECT_EQ(link.frames(), 0u);
}

TEST_F(RowStreamerTest, RawFilesStreamToo) {
  source_.path = dir_.path("rows.raw");
  source_.format = FileFormat::kRaw;
  std::ofstream(source_.path, std::ios::binary) << rows(0, kRows);
  FakeWorkerLink link;
  ASSERT_TRUE(stream_upload_rows(link, "r1.0", 0, source_, DType::kFloat32, 5, 5).ok());
  auto sent = link.sent();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].payload, rows(5, 5));
}

}  // namespace
}  // namespace lizard
