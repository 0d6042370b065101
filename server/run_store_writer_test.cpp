// RunStoreWriter: records, requests and checkpoints reach the store without
// the run waiting for it, the latest record and checkpoint of a run win, a
// request goes before its record, nothing of a settled run is written after
// settle(), and what is pending is written before the writer goes.
#include "server/run_store_writer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace lizard {
namespace {

// A store that records its writes ("r1 checkpoint 3", "r1 request",
// "r1 record running") and can hold them back.
class RecordingStore : public RunStore {
 public:
  RecordingStore() : RunStore("") {}
  Status save(const std::string& run_id, uint64_t, const std::string& status,
              const nlohmann::json&) override {
    return write(run_id + " record " + status);
  }
  Status save_request(const std::string& run_id, const nlohmann::json&) override {
    return write(run_id + " request");
  }
  Status save_checkpoint(const std::string& run_id, const RunCheckpoint& cp) override {
    return write(run_id + " checkpoint " + std::to_string(cp.iteration));
  }
  Status drop_checkpoint(const std::string& run_id) override {
    std::lock_guard<std::mutex> l(mu);
    writes.push_back(run_id + " drop checkpoint");
    return Status::Ok();
  }
  Result<std::vector<StoredRun>> load_all() const override { return std::vector<StoredRun>{}; }
  Status remove(const std::string&) override { return Status::Ok(); }

  // Holds the writes of `run` ("": of every run) until release().
  void hold(const std::string& run = "") {
    std::lock_guard<std::mutex> l(mu);
    held = true;
    held_run = run;
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
  std::vector<std::string> written() {
    std::lock_guard<std::mutex> l(mu);
    return writes;
  }

 private:
  Status write(std::string what) {
    std::unique_lock<std::mutex> l(mu);
    if (held_run.empty() || what.rfind(held_run + " ", 0) == 0) {
      entered = true;
      cv.notify_all();
      cv.wait(l, [&] { return !held; });
    }
    writes.push_back(std::move(what));
    return fail ? unavailable("disk gone") : Status::Ok();
  }

  std::mutex mu;
  std::condition_variable cv;
  bool held = false, entered = false, fail = false;
  std::string held_run;
  std::vector<std::string> writes;
};

using Writes = std::vector<std::string>;

// Checkpoints written as soon as the writer can, not one an interval.
constexpr std::chrono::milliseconds kAtOnce{0};

RunCheckpoint at(int64_t iteration) {
  return RunCheckpoint{iteration, false, "state", "agg"};
}

TEST(RunStoreWriter, WritesWhatItIsHandedWithoutHoldingTheCaller) {
  RecordingStore store;
  RunStoreWriter writer(&store, kAtOnce);
  store.hold();
  writer.save_checkpoint("r1", at(1));  // returns while the store is held
  store.wait_entered();
  store.release();
  writer.flush();
  EXPECT_EQ(store.written(), Writes{"r1 checkpoint 1"});
}

TEST(RunStoreWriter, OnlyTheLatestPendingRecordAndCheckpointOfARunAreWritten) {
  RecordingStore store;
  RunStoreWriter writer(&store, kAtOnce);
  store.hold();
  writer.save_checkpoint("r1", at(1));
  store.wait_entered();  // iteration 1 is being written; the next ones wait
  writer.save_record("r1", 1, "queued", {});
  writer.save_record("r1", 1, "running", {});
  for (int64_t i = 2; i <= 50; ++i) writer.save_checkpoint("r1", at(i));
  writer.save_checkpoint("r2", at(7));
  store.release();
  writer.flush();
  EXPECT_EQ(store.written(), (Writes{"r1 checkpoint 1", "r1 record running", "r1 checkpoint 50",
                                     "r2 checkpoint 7"}));
}

// A stored unfinished record always has the request it resumes from.
TEST(RunStoreWriter, ARunsRequestIsWrittenBeforeItsRecord) {
  RecordingStore store;
  RunStoreWriter writer(&store, kAtOnce);
  store.hold();
  writer.save_checkpoint("r0", at(1));
  store.wait_entered();
  writer.save_submission("r1", {{"max_iterations", 3}}, 1, "queued", {});
  writer.save_record("r1", 1, "running", {});
  store.release();
  writer.flush();
  EXPECT_EQ(store.written(), (Writes{"r0 checkpoint 1", "r1 request", "r1 record running"}));
}

// settle() comes before a run's finished record: its pending request is
// written then and there, its pending record and checkpoint are dropped, and
// nothing of it follows.
TEST(RunStoreWriter, SettleWritesTheRequestAndDropsTheRest) {
  RecordingStore store;
  RunStoreWriter writer(&store, kAtOnce);
  store.hold("r0");  // the writer is busy with another run
  writer.save_checkpoint("r0", at(1));
  store.wait_entered();
  writer.save_submission("r1", {}, 1, "queued", {});
  writer.save_record("r1", 1, "running", {});
  writer.save_checkpoint("r1", at(2));
  EXPECT_TRUE(writer.settle("r1").ok());
  EXPECT_EQ(store.written(), Writes{"r1 request"});
  store.release();
  writer.flush();
  EXPECT_EQ(store.written(), (Writes{"r1 request", "r0 checkpoint 1"}));
  EXPECT_TRUE(writer.settle("r1").ok());  // nothing pending: nothing to do
}

// A write of the run's record under way ends before settle() returns, so
// that the finished record that follows is the last.
TEST(RunStoreWriter, SettleWaitsForTheRunsRecordUnderWay) {
  RecordingStore store;
  RunStoreWriter writer(&store, kAtOnce);
  store.hold("r1");
  writer.save_record("r1", 1, "running", {});
  store.wait_entered();
  std::atomic<bool> settled{false};
  std::thread settling([&] {
    EXPECT_TRUE(writer.settle("r1").ok());
    settled = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(settled) << "settle() waits for the record's write under way";
  store.release();
  settling.join();
  writer.flush();
  EXPECT_EQ(store.written(), Writes{"r1 record running"});
}

// A checkpoint write under way does not hold up the run's end: settle()
// returns at once, and the checkpoint is dropped again once it is written.
TEST(RunStoreWriter, ACheckpointWrittenWhileTheRunSettlesIsDroppedAfterIt) {
  RecordingStore store;
  RunStoreWriter writer(&store, kAtOnce);
  store.hold();
  writer.save_checkpoint("r1", at(1));
  store.wait_entered();
  EXPECT_TRUE(writer.settle("r1").ok());  // while the checkpoint is held
  EXPECT_EQ(store.written(), Writes{});
  store.release();
  writer.flush();
  EXPECT_EQ(store.written(), (Writes{"r1 checkpoint 1", "r1 drop checkpoint"}));
}

// A run's first checkpoint is written at once, later ones at most once an
// interval (the latest of them), and flush() writes what is pending.
TEST(RunStoreWriter, ARunsCheckpointsAreWrittenAtMostOnceAnInterval) {
  RecordingStore store;
  RunStoreWriter writer(&store, std::chrono::seconds(60));
  writer.save_checkpoint("r1", at(1));
  for (int i = 0; i < 500 && store.written().empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(store.written(), Writes{"r1 checkpoint 1"});
  for (int64_t i = 2; i <= 5; ++i) writer.save_checkpoint("r1", at(i));
  writer.save_record("r1", 1, "running", {});  // records are not held back
  writer.save_checkpoint("r2", at(1));         // nor another run's first checkpoint
  for (int i = 0; i < 500 && store.written().size() < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(store.written(), (Writes{"r1 checkpoint 1", "r1 record running", "r2 checkpoint 1"}));
  writer.flush();
  EXPECT_EQ(store.written(),
            (Writes{"r1 checkpoint 1", "r1 record running", "r2 checkpoint 1", "r1 checkpoint 5"}));
}

// A held-back checkpoint is written once its interval has passed, with no
// further handover to wake the writer.
TEST(RunStoreWriter, AHeldBackCheckpointIsWrittenWhenItsIntervalHasPassed) {
  RecordingStore store;
  RunStoreWriter writer(&store, std::chrono::milliseconds(50));
  writer.save_checkpoint("r1", at(1));
  writer.save_checkpoint("r1", at(2));  // held back, or replacing the first
  for (int i = 0;
       i < 500 && (store.written().empty() || store.written().back() != "r1 checkpoint 2"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_FALSE(store.written().empty());
  EXPECT_EQ(store.written().back(), "r1 checkpoint 2");
}

TEST(RunStoreWriter, PendingWritesAreWrittenBeforeItGoes) {
  RecordingStore store;
  {
    RunStoreWriter writer(&store, kAtOnce);
    store.hold();
    writer.save_checkpoint("r1", at(1));
    store.wait_entered();
    writer.save_checkpoint("r1", at(9));
    writer.save_record("r2", 2, "running", {});
    store.release();
  }
  EXPECT_EQ(store.written(), (Writes{"r1 checkpoint 1", "r1 checkpoint 9", "r2 record running"}));
}

TEST(RunStoreWriter, AFailedWriteIsLoggedAndTheNextOneStillGoes) {
  RecordingStore store;
  RunStoreWriter writer(&store, kAtOnce);
  store.set_fail(true);
  writer.save_checkpoint("r1", at(1));
  writer.flush();
  store.set_fail(false);
  writer.save_checkpoint("r1", at(2));
  writer.flush();
  EXPECT_EQ(store.written(), (Writes{"r1 checkpoint 1", "r1 checkpoint 2"}));
}

// A request the store refuses leaves the run's records unwritten too: a
// stored unfinished record without its request could not be resumed.
TEST(RunStoreWriter, NoRecordOfARunWhoseRequestFailedIsWritten) {
  RecordingStore store;
  RunStoreWriter writer(&store, kAtOnce);
  store.set_fail(true);
  writer.save_submission("r1", {}, 1, "queued", {});
  writer.flush();
  store.set_fail(false);
  writer.save_record("r1", 1, "running", {});
  writer.save_checkpoint("r1", at(1));
  writer.save_record("r2", 2, "running", {});
  writer.flush();
  EXPECT_EQ(store.written(), (Writes{"r1 request", "r2 record running"}));
}

}  // namespace
}  // namespace lizard
