#include "server/upload_pipeline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <string>
#include <thread>

#include "common/piece_digest.h"
#include "server/durable_write.h"

namespace lizard {
namespace {

using namespace std::chrono_literals;

// What a FakeSink saw, shared with the test (the sink may outlive the pipeline).
struct Seen {
  std::mutex mu;
  std::condition_variable cv;
  std::string bytes;
  int writes = 0;
  bool finished = false;
  bool destroyed = false;
  int fail_at_write = -1;    // this write (0-based) fails as a full disk would
  bool hold_writes = false;  // writes wait until it is false again
  bool writing = false;      // a write is waiting on hold_writes

  void wait_for(const std::function<bool()>& ready) {
    std::unique_lock<std::mutex> l(mu);
    ASSERT_TRUE(cv.wait_for(l, 10s, ready)) << "timed out";
  }
};

class FakeSink : public UploadSink {
 public:
  explicit FakeSink(std::shared_ptr<Seen> seen) : seen_(std::move(seen)) {}
  ~FakeSink() override {
    std::lock_guard<std::mutex> l(seen_->mu);
    seen_->destroyed = true;
    seen_->cv.notify_all();
  }
  const std::string& path() const override { return path_; }
  Status write(const char* data, size_t size) override {
    std::unique_lock<std::mutex> l(seen_->mu);
    seen_->writing = true;
    seen_->cv.notify_all();
    seen_->cv.wait(l, [&] { return !seen_->hold_writes; });
    seen_->writing = false;
    if (seen_->writes++ == seen_->fail_at_write) return disk_full_error("upload u1");
    seen_->bytes.append(data, size);
    return Status::Ok();
  }
  Status finish() override {
    std::lock_guard<std::mutex> l(seen_->mu);
    seen_->finished = true;
    return Status::Ok();
  }

 private:
  std::shared_ptr<Seen> seen_;
  std::string path_ = "/state/datasets/u1.part";
};

// Fills the pipeline with `body` as the io thread does, waiting for a free
// buffer when none is; the status finish() reported.
Status pour(UploadPipeline& p, const std::string& body, int* waits = nullptr) {
  size_t at = 0;
  while (at < body.size() && !p.failed()) {
    std::promise<void> freed;
    UploadPipeline::Span s = p.acquire([&freed] { freed.set_value(); });
    if (!s.data && p.failed()) break;
    if (!s.data) {
      if (waits) ++*waits;
      if (freed.get_future().wait_for(10s) != std::future_status::ready)
        return internal_error("no buffer was freed");
      continue;
    }
    const size_t n = std::min(s.size, body.size() - at);
    std::memcpy(s.data, body.data() + at, n);
    p.submit(n);
    at += n;
  }
  std::promise<Status> done;
  p.finish([&done](Status st) { done.set_value(std::move(st)); });
  auto f = done.get_future();
  if (f.wait_for(10s) != std::future_status::ready) return internal_error("never finished");
  return f.get();
}

std::string piece_digest(const std::string& bytes) {
  PieceDigest d;
  d.update(bytes.data(), bytes.size());
  return d.hex_digest();
}

std::string body_of(size_t size) {
  std::string s(size, '\0');
  for (size_t i = 0; i < size; ++i) s[i] = static_cast<char>(i * 131 + i / 977);
  return s;
}

// The bytes reach the sink whole and in order, a buffer at a time; with
// every buffer in flight the reader waits to be told one is free.
TEST(UploadPipeline, BytesReachTheSinkInOrderAndAFullPipelineMakesTheReaderWait) {
  auto seen = std::make_shared<Seen>();
  const std::string body = body_of(100 * 1000 + 7);
  int waits = 0;
  {
    UploadPipeline p(std::make_unique<FakeSink>(seen), 2, 1000);
    EXPECT_EQ(p.path(), "/state/datasets/u1.part");
    {
      std::lock_guard<std::mutex> l(seen->mu);
      seen->hold_writes = true;  // the disk is slow at first
    }
    std::thread slow_disk([&] {
      seen->wait_for([&] { return seen->writing; });
      std::this_thread::sleep_for(20ms);
      std::lock_guard<std::mutex> l(seen->mu);
      seen->hold_writes = false;
      seen->cv.notify_all();
    });
    Status st = pour(p, body, &waits);
    slow_disk.join();
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(p.digest(), piece_digest(body));
  }
  EXPECT_EQ(seen->bytes, body);
  EXPECT_EQ(seen->writes, 101);
  EXPECT_TRUE(seen->finished);
  EXPECT_GE(waits, 1) << "the reader never waited for the slow disk";
  seen->wait_for([&] { return seen->destroyed; });
}

// The digest is the PieceDigest of the body whatever the number of hashers,
// with buffers that straddle the pieces' bounds and a last piece cut short;
// no bytes have the digest of none.
TEST(UploadPipeline, TheDigestIsThePieceDigestOfTheBodyWithAnyNumberOfHashers) {
  const std::string body = body_of(3 * PieceDigest::kPieceBytes + 12345);
  for (size_t hashers : {1, 2, 3, 5}) {
    SCOPED_TRACE("hashers " + std::to_string(hashers));
    auto seen = std::make_shared<Seen>();
    UploadPipeline p(std::make_unique<FakeSink>(seen), 6, 1000003, hashers);
    Status st = pour(p, body);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(p.digest(), piece_digest(body));
    std::lock_guard<std::mutex> l(seen->mu);
    EXPECT_TRUE(seen->bytes == body);
  }
  auto seen = std::make_shared<Seen>();
  UploadPipeline empty(std::make_unique<FakeSink>(seen), 2, 1000, 2);
  ASSERT_TRUE(pour(empty, "").ok());
  EXPECT_EQ(empty.digest(), piece_digest(""));
}

// A sink that refuses bytes (a full disk) ends the upload: no more bytes are
// written, the reader is told, and finish() reports the refusal, unfinished.
TEST(UploadPipeline, ASinkThatRefusesBytesEndsTheUpload) {
  auto seen = std::make_shared<Seen>();
  seen->fail_at_write = 3;
  UploadPipeline p(std::make_unique<FakeSink>(seen), 2, 1000);
  Status st = pour(p, body_of(50 * 1000));
  EXPECT_EQ(st.code(), Code::kStorageFull) << st.message();
  EXPECT_TRUE(p.failed());
  EXPECT_EQ(p.failure().code(), Code::kStorageFull);
  EXPECT_EQ(p.acquire(nullptr).data, nullptr);
  std::lock_guard<std::mutex> l(seen->mu);
  EXPECT_EQ(seen->bytes.size(), 3000u);
  EXPECT_LE(seen->writes, 6) << "bytes were written after the refusal";
  EXPECT_FALSE(seen->finished);
}

// A connection that ends mid-body drops the pipeline while the disk is busy:
// the caller does not wait for the write under way, and the sink (which
// removes its file) goes once that write is over, never finished.
TEST(UploadPipeline, AnAbandonedUploadDropsItsSinkWithoutMakingTheCallerWait) {
  auto seen = std::make_shared<Seen>();
  {
    std::lock_guard<std::mutex> l(seen->mu);
    seen->hold_writes = true;
  }
  auto p = std::make_unique<UploadPipeline>(std::make_unique<FakeSink>(seen), 2, 1000);
  UploadPipeline::Span s = p->acquire(nullptr);
  ASSERT_NE(s.data, nullptr);
  std::memset(s.data, 'x', 1000);
  p->submit(1000);
  seen->wait_for([&] { return seen->writing; });
  const auto t0 = std::chrono::steady_clock::now();
  p.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  {
    std::lock_guard<std::mutex> l(seen->mu);
    EXPECT_FALSE(seen->destroyed);
    seen->hold_writes = false;
    seen->cv.notify_all();
  }
  seen->wait_for([&] { return seen->destroyed; });
  std::lock_guard<std::mutex> l(seen->mu);
  EXPECT_FALSE(seen->finished);
}

}  // namespace
}  // namespace lizard
