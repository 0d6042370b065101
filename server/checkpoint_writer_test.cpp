// CheckpointWriter: checkpoints reach the store without the run waiting for
// it, the latest one of a run wins, nothing of a forgotten run is written
// after forget(), and what is pending is written before the writer goes.
#include "server/checkpoint_writer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace lizard {
namespace {

// A store that records checkpoint writes and can hold them back.
class RecordingStore : public RunStore {
 public:
  RecordingStore() : RunStore("") {}
  Status save(const std::string&, uint64_t, const std::string&, const nlohmann::json&) override {
    return Status::Ok();
  }
  Status save_request(const std::string&, const nlohmann::json&) override { return Status::Ok(); }
  Status save_checkpoint(const std::string& run_id, const RunCheckpoint& cp) override {
    std::unique_lock<std::mutex> l(mu);
    entered = true;
    cv.notify_all();
    cv.wait(l, [&] { return !held; });
    writes.emplace_back(run_id, cp.iteration);
    return fail ? unavailable("disk gone") : Status::Ok();
  }
  Status drop_checkpoint(const std::string&) override { return Status::Ok(); }
  Result<std::vector<StoredRun>> load_all() const override { return std::vector<StoredRun>{}; }
  Status remove(const std::string&) override { return Status::Ok(); }

  void hold() {
    std::lock_guard<std::mutex> l(mu);
    held = true;
    entered = false;
  }
  void wait_entered() {
    std::unique_lock<std::mutex> l(mu);
    ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(10), [&] { return entered; }));
  }
  void release() {
    {
      std::lock_guard<std::mutex> l(mu);
      held = false;
    }
    cv.notify_all();
  }
  void set_fail(bool f) {
    std::lock_guard<std::mutex> l(mu);
    fail = f;
  }
  std::vector<std::pair<std::string, int64_t>> written() {
    std::lock_guard<std::mutex> l(mu);
    return writes;
  }

  std::mutex mu;
  std::condition_variable cv;
  bool held = false, entered = false, fail = false;
  std::vector<std::pair<std::string, int64_t>> writes;
};

RunCheckpoint at(int64_t iteration) {
  return RunCheckpoint{iteration, false, "state", "agg"};
}

TEST(CheckpointWriter, WritesWhatItIsHandedWithoutHoldingTheCaller) {
  RecordingStore store;
  CheckpointWriter writer(&store);
  store.hold();
  writer.save("r1", at(1));  // returns while the store is held
  store.wait_entered();
  store.release();
  writer.flush();
  EXPECT_EQ(store.written(), (std::vector<std::pair<std::string, int64_t>>{{"r1", 1}}));
}

TEST(CheckpointWriter, OnlyTheLatestPendingCheckpointOfARunIsWritten) {
  RecordingStore store;
  CheckpointWriter writer(&store);
  store.hold();
  writer.save("r1", at(1));
  store.wait_entered();  // iteration 1 is being written; the next ones wait
  for (int64_t i = 2; i <= 50; ++i) writer.save("r1", at(i));
  writer.save("r2", at(7));
  store.release();
  writer.flush();
  auto w = store.written();
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0], (std::pair<std::string, int64_t>{"r1", 1}));
  EXPECT_EQ(w[1], (std::pair<std::string, int64_t>{"r1", 50}));
  EXPECT_EQ(w[2], (std::pair<std::string, int64_t>{"r2", 7}));
}

TEST(CheckpointWriter, NothingOfAForgottenRunIsWrittenAfterForget) {
  RecordingStore store;
  CheckpointWriter writer(&store);
  store.hold();
  writer.save("r1", at(1));
  store.wait_entered();
  writer.save("r1", at(2));  // pending behind the write under way
  std::thread forgetting([&] { writer.forget("r1"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  store.release();  // forget() waited for the write under way
  forgetting.join();
  const size_t after_forget = store.written().size();
  writer.save("r2", at(1));  // the writer goes round again
  writer.flush();
  auto w = store.written();
  ASSERT_EQ(w.size(), after_forget + 1);
  EXPECT_EQ(w.back(), (std::pair<std::string, int64_t>{"r2", 1}));
  EXPECT_EQ(w[0], (std::pair<std::string, int64_t>{"r1", 1}));
}

TEST(CheckpointWriter, PendingCheckpointsAreWrittenBeforeItGoes) {
  RecordingStore store;
  {
    CheckpointWriter writer(&store);
    store.hold();
    writer.save("r1", at(1));
    store.wait_entered();
    writer.save("r1", at(9));
    writer.save("r2", at(3));
    store.release();
  }
  EXPECT_EQ(store.written(),
            (std::vector<std::pair<std::string, int64_t>>{{"r1", 1}, {"r1", 9}, {"r2", 3}}));
}

TEST(CheckpointWriter, AFailedWriteIsLoggedAndTheNextOneStillGoes) {
  RecordingStore store;
  CheckpointWriter writer(&store);
  store.set_fail(true);
  writer.save("r1", at(1));
  writer.flush();
  store.set_fail(false);
  writer.save("r1", at(2));
  writer.flush();
  EXPECT_EQ(store.written(), (std::vector<std::pair<std::string, int64_t>>{{"r1", 1}, {"r1", 2}}));
}

}  // namespace
}  // namespace lizard
