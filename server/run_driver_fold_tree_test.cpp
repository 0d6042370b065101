// RunDriver with a fold tree (server/run_fold_tree.h): 256 fake workers on
// one host at fan-in 16, each answering as a worker of the tree does — the
// server sends each iteration to the tree's sender, which sends back its
// subtree's sum — so that what reaches the server is counted.
#include <atomic>
#include <map>
#include <set>

#include "server/testing/run_driver_fixture.h"

namespace lizard::testing {
namespace {

constexpr int kWorkers = 256, kFanIn = 16, kXRows = 2560;

// x = 1..kXRows: the sum of x over rows [first, first + n).
double sum_of_rows(int64_t first, int64_t n) {
  return static_cast<double>(n) * static_cast<double>(2 * first + n + 1) / 2;
}

class FoldTreeDriver : public RunDriverTest {
 protected:
  // Each fake keeps its run_start; on an iteration, a sender answers with the
  // sum of its subtree, the others with nothing (their parent folds them).
  void play_the_tree() {
    const Manifest& m = program_->image.manifest;
    for (auto& w : fakes_) {
      FakeWorker* f = w.get();
      f->intercept = [this, f, &m](const Message& msg) {
        if (msg.type == MessageType::kRunStart) {
          auto start = RunStartMsg::parse(msg.header);
          std::lock_guard<std::mutex> l(starts_mu_);
          if (start.ok()) starts_[f->id()] = *start;
          return false;  // it loads as ever
        }
        if (msg.type != MessageType::kIterate) return false;
        const IterateMsg it = IterateMsg::parse(msg.packed).value();
        RunStartMsg start;
        {
          std::lock_guard<std::mutex> l(starts_mu_);
          start = starts_.at(f->id());
        }
        if (!start.fold.parent_id.empty()) return true;  // its parent sends for it
        double sum = 0;
        int64_t count = 0;
        add_subtree(f->id(), &sum, &count);
        SectionBuffer agg = make_section(m.aggregate, m, ParamValues{}).value();
        std::memcpy(agg.data(*agg.find("sum")), &sum, sizeof sum);
        std::memcpy(agg.data(*agg.find("count")), &count, sizeof count);
        IterationResultMsg r;
        r.run_id = it.run_id;
        r.iteration = it.iteration;
        r.workers = start.fold.empty() ? 1 : start.fold.workers;
        ++frames_to_server_;
        std::lock_guard<std::mutex> l(mu_);
        driver_->deliver(
            from_worker(f->id(), r.to_message(std::string(agg.bytes.begin(), agg.bytes.end()))));
        return true;
      };
    }
  }

  void add_subtree(const std::string& id, double* sum, int64_t* count) {
    RunStartMsg start;
    {
      std::lock_guard<std::mutex> l(starts_mu_);
      start = starts_.at(id);
    }
    *sum += sum_of_rows(start.first_row, start.rows);
    *count += start.rows;
    for (const std::string& child : start.fold.children) add_subtree(child, sum, count);
  }

  json many_rows() {
    std::vector<double> x;
    for (int i = 1; i <= kXRows; ++i) x.push_back(i);
    return {{"dataset", {{"x", {{"values", x}}}}}, {"max_iterations", 3}};
  }

  std::mutex starts_mu_;
  std::map<std::string, RunStartMsg> starts_;  // GUARDED_BY(starts_mu_)
  std::atomic<int> frames_to_server_{0};
};

TEST_F(FoldTreeDriver, TwoHundredFiftySixWorkersSendTheServerAtMostTheirNumberOverTheFanIn) {
  use_program(kSums);
  fold_port_ = 7000;
  fold_fan_in_ = kFanIn;
  for (int i = 0; i < kWorkers; ++i) add_worker();
  play_the_tree();
  start(many_rows());
  json r = wait();
  ASSERT_EQ(r["status"], "done") << r.dump(2);
  std::set<std::string> planned;
  for (const json& e : r["plan"]["executors"]) planned.insert(e.value("worker", ""));
  EXPECT_EQ(planned.size(), static_cast<size_t>(kWorkers));
  EXPECT_EQ(r["result"]["aggregate"]["count"], kXRows);
  EXPECT_DOUBLE_EQ(r["result"]["state"]["total"].get<double>(), 3 * sum_of_rows(0, kXRows));
  EXPECT_LE(frames_to_server_.load(), 3 * kWorkers / kFanIn);
  EXPECT_EQ(r["phases"]["fold_tree_senders"], 1);  // one host: its workers fold there
  // Every worker was told its place: one sends to the server, the rest to another.
  std::lock_guard<std::mutex> l(starts_mu_);
  int to_server = 0;
  for (const auto& [id, start] : starts_) {
    EXPECT_FALSE(start.fold.empty()) << id;
    // At most fan-in - 1 at each of the two levels 256 workers make.
    EXPECT_LE(start.fold.children.size(), static_cast<size_t>(2 * (kFanIn - 1))) << id;
    to_server += start.fold.parent_id.empty();
    if (!start.fold.parent_id.empty()) {
      EXPECT_EQ(start.fold.parent_address, "127.0.0.1:7000") << id;
    }
  }
  EXPECT_EQ(to_server, 1);
  // The iterates went to the sender alone: it passes them down the tree.
  size_t iterates = 0;
  for (auto& w : fakes_) iterates += w->link()->sent_of(MessageType::kIterate).size();
  EXPECT_EQ(iterates, 3u);
}

TEST_F(FoldTreeDriver, AResultFoldingTheWrongNumberOfWorkersFailsTheRunNamingIt) {
  use_program(kSums);
  fold_port_ = 7000;
  fold_fan_in_ = 2;
  for (int i = 0; i < 3; ++i) add_worker();
  // Default fakes answer every iterate themselves, each folding one worker.
  start();
  json r = wait();
  ASSERT_EQ(r["status"], "failed") << r.dump(2);
  EXPECT_NE(r["error"].get<std::string>().find("folding 1 workers' results; its place in the "
                                               "fold tree folds 3"),
            std::string::npos)
      << r["error"];
}

TEST_F(FoldTreeDriver, WorkersThatTakeNoFoldLinksFoldAtTheServer) {
  use_program(kSums);
  fold_fan_in_ = 2;  // fold_port_ stays 0
  for (int i = 0; i < 3; ++i) add_worker();
  start();
  json r = wait();
  ASSERT_EQ(r["status"], "done") << r.dump(2);
  EXPECT_FALSE(r["phases"].contains("fold_tree_senders"));
  for (auto& w : fakes_)
    for (const Message& m : w->link()->sent_of(MessageType::kRunStart))
      EXPECT_FALSE(m.header.contains("fold")) << m.header.dump();
}

}  // namespace
}  // namespace lizard::testing
