// A worker's staging and dropping of kept rows: a stage_rows message has each
// named executor keep the file's rows under the key a run over them names,
// and is answered with those keys; a drop lets go of a source's rows at
// once on free executors, and on one a run holds only once the run ends.
#include "client/row_staging.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include "common/mailbox.h"
#include "dataset/test_files.h"

namespace lizard {
namespace {

// Keeps what it is asked to keep, by key.
class KeepingExecutor : public Executor {
 public:
  const ExecutorInfo& info() const override { return info_; }
  Status build(const ProgramImage&) override { return Status::Ok(); }
  Status begin_run(const ProgramImage&, const ParamValues&, PartitionData) override {
    return Status::Ok();
  }
  Status iterate(const SectionBuffer&, int64_t, SectionBuffer*, IterationStats*) override {
    return Status::Ok();
  }
  Status iterate_rows(const SectionBuffer&, int64_t, SectionBuffer*, IterationStats*, int64_t,
                      int64_t) override {
    return Status::Ok();
  }
  Result<std::vector<std::vector<uint8_t>>> end_run(bool) override {
    return std::vector<std::vector<uint8_t>>{};
  }
  CompileStats run_compile_stats() const override { return {}; }
  void refresh_free_memory() override {}
  std::vector<std::string> kept_rows() const override {
    std::lock_guard<std::mutex> l(mu_);
    return {kept_.begin(), kept_.end()};
  }
  Status keep_file_rows(const std::string& key, const FileRows& where) override {
    std::vector<uint8_t> rows(where.size);
    LIZARD_RETURN_IF_ERROR(read_file_rows(where, rows.data(), 1));
    std::lock_guard<std::mutex> l(mu_);
    kept_.insert(key);
    return Status::Ok();
  }
  void forget_kept_rows(const std::set<std::string>& keys) override {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& k : keys) kept_.erase(k);
  }

 private:
  ExecutorInfo info_;
  mutable std::mutex mu_;
  std::set<std::string> kept_;
};

class RowStagingTest : public ::testing::Test {
 protected:
  RowStagingTest() {
    for (int i = 0; i < 2; ++i) {
      executors_.push_back(std::make_unique<ExecutorHandle>());
      executors_.back()->executor = std::make_unique<KeepingExecutor>();
    }
    path_ = dir_.write("rows.raw", std::string(10 * 8, '\1'));  // 10 rows of 2 float32
  }
  // The answer to a stage of rows [first, first + rows) on each executor named.
  RowsStagedMsg stage(const std::vector<StagedPart>& parts) {
    StageRowsMsg m{"s1", path_, "raw", "float32", 2, {}, parts};
    staging_.post(encode(m.to_message()));
    auto frame = done_.pop_for(std::chrono::seconds(10));
    EXPECT_TRUE(frame && !frame->empty());
    if (!frame || frame->empty()) return {};
    auto v = decode_view(*frame);
    auto r = RowsStagedMsg::parse(v->header);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : RowsStagedMsg{};
  }
  std::vector<std::string> kept(size_t i) { return executors_[i]->executor->kept_rows(); }
  // Waits (3 s at most) until executor i keeps nothing.
  bool emptied(size_t i) {
    for (int t = 0; t < 300 && !kept(i).empty(); ++t)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return kept(i).empty();
  }

  TempDir dir_;
  std::string path_;
  std::vector<std::unique_ptr<ExecutorHandle>> executors_;
  KeptRowsCatalog catalog_;
  Mailbox<std::string> done_;
  RowStaging staging_{&executors_, &catalog_, nullptr, nullptr,
                      [this](std::string f) { done_.push(std::move(f)); }};
};

TEST_F(RowStagingTest, EachExecutorKeepsItsPartUnderARunsKey) {
  RowsStagedMsg r = stage({{0, 0, 4}, {1, 4, 6}});
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.parts.size(), 2u);
  auto id = FileIdentity::of(path_);
  ASSERT_TRUE(id.ok());
  const FileRowsKey second{*id, path_, FileFormat::kRaw, DType::kFloat32, 2, 4, 6, ""};
  EXPECT_EQ(r.parts[1].key, second.key());
  EXPECT_EQ(r.parts[1].bytes, 6u * 8);
  EXPECT_FALSE(r.parts[1].was_kept);
  EXPECT_EQ(kept(1), std::vector<std::string>{second.key()});
  EXPECT_EQ(catalog_.keys_of(path_).size(), 2u);
  EXPECT_TRUE(stage({{1, 4, 6}}).parts.at(0).was_kept);
  // Rows past the file's end, or an executor the worker lacks: the error.
  EXPECT_FALSE(stage({{0, 8, 4}}).ok);
  RowsStagedMsg none = stage({{5, 0, 1}});
  EXPECT_EQ(none.error, "executor 5: this worker has 2 executor(s)");
}

TEST_F(RowStagingTest, ADropWaitsForTheRunThatHoldsTheExecutor) {
  ASSERT_TRUE(stage({{0, 0, 5}, {1, 5, 5}}).ok);
  std::atomic<bool> never{false};
  auto run = ExecutorClaim::take(executors_[1].get(), "r7", SteadyClock::now(), never);
  ASSERT_TRUE(run.ok());  // a run holds executor 1
  staging_.post(encode(DropRowsMsg{path_}.to_message()));
  ASSERT_TRUE(done_.pop_for(std::chrono::seconds(10)));
  EXPECT_TRUE(emptied(0));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(kept(1).size(), 1u);  // still the run's
  run->reset();
  EXPECT_TRUE(emptied(1));
}

}  // namespace
}  // namespace lizard
