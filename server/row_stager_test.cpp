// Staging rows outside runs, the server's side: the rows are split over the
// free executors as a run's plan splits them, each worker is sent its parts,
// the executors count as busy until the workers answer, and a worker's
// refusal or too few free executors come back as errors.  Dropping tells
// every worker.
#include "server/row_stager.h"

#include <gtest/gtest.h>

#include "protocol/staging_messages.h"
#include "server/testing/fakes.h"
#include "server/worker_registry.h"

namespace lizard {
namespace {

using testing::FakeWorkerLink;

class RowStagerTest : public ::testing::Test {
 protected:
  // A worker of `executors` CPU executors whose link answers stage_rows
  // with `ok` (each part kept under "key<first_row>").
  std::string add_worker(int executors, bool ok = true) {
    auto link = std::make_shared<FakeWorkerLink>();
    HelloMsg h;
    for (int i = 0; i < executors; ++i) {
      ExecutorInfo e;
      e.kind = "cpu";
      e.free_memory = uint64_t{1} << 30;
      h.executors.push_back(e);
    }
    const std::string id = workers_.connect(link);
    EXPECT_TRUE(workers_.hello(id, h, {}));
    link->on_send([this, id, ok](const std::string& frame) {
      auto m = decode_view(frame);
      if (!m.ok() || m->type != MessageType::kStageRows) return;
      auto s = StageRowsMsg::parse(m->header);
      ASSERT_TRUE(s.ok()) << s.status().message();
      seen_.push_back(*s);
      for (const WorkerView& w : workers_.view())
        for (const auto& e : w.executors) busy_during_ += e.busy;
      RowsStagedMsg reply{s->stage_id, ok, ok ? "" : "executor 0: no room", {}};
      for (StagedPart p : s->parts) {
        p.bytes = static_cast<uint64_t>(p.rows) * 16;
        p.key = "key" + std::to_string(p.first_row);
        reply.parts.push_back(p);
      }
      stager_.on_reply(id, reply);
    });
    links_.push_back(link);
    return id;
  }
  StageRequest request(int64_t rows, int64_t executors = 0) {
    StageRequest r;
    r.path = "/data/x.npy";
    r.dtype = DType::kFloat64;
    r.width = 2;
    r.rows = rows;
    r.executors = executors;
    return r;
  }
  WorkerRegistry workers_;
  RowStager stager_{&workers_, {"/data"}};
  std::vector<std::shared_ptr<FakeWorkerLink>> links_;
  std::vector<StageRowsMsg> seen_;
  int busy_during_ = 0;
};

TEST_F(RowStagerTest, SplitsTheRowsAsARunsPlanAndReportsWhatWasKept) {
  const std::string a = add_worker(2), b = add_worker(1);
  auto staged = stager_.stage(request(300));
  ASSERT_TRUE(staged.ok()) << staged.status().message();
  ASSERT_EQ(seen_.size(), 2u);
  EXPECT_EQ(seen_[0].path, "/data/x.npy");
  EXPECT_EQ(seen_[0].dtype, "float64");
  EXPECT_EQ(seen_[0].width, 2);
  EXPECT_EQ(seen_[0].data_roots, std::vector<std::string>{"/data"});
  const auto& e = (*staged)["executors"];
  ASSERT_EQ(e.size(), 3u) << staged->dump();
  EXPECT_EQ(e[0]["worker"], a);
  EXPECT_EQ(e[0]["rows"], nlohmann::json({0, 100}));
  EXPECT_EQ(e[1]["rows"], nlohmann::json({100, 200}));
  EXPECT_EQ(e[2]["worker"], b);
  EXPECT_EQ(e[2]["rows"], nlohmann::json({200, 300}));
  EXPECT_EQ((*staged)["bytes"], 300 * 16);
  EXPECT_EQ(busy_during_, 6);  // every executor taken while its worker staged, twice seen
  for (const WorkerView& w : workers_.view())
    for (const auto& x : w.executors) EXPECT_FALSE(x.busy);  // given back
}

TEST_F(RowStagerTest, StagesOntoAsManyExecutorsAsAsked) {
  add_worker(3);
  auto staged = stager_.stage(request(10, 2));
  ASSERT_TRUE(staged.ok()) << staged.status().message();
  EXPECT_EQ((*staged)["executors"].size(), 2u);
  auto too_many = stager_.stage(request(10, 4));
  EXPECT_EQ(too_many.status().code(), Code::kUnavailable);
  EXPECT_EQ(too_many.status().message(),
            "the stage needs 4 free executor(s), but 3 of the 3 connected are free; stage again "
            "later");
}

TEST_F(RowStagerTest, AWorkersRefusalIsTheAnswer) {
  const std::string id = add_worker(1, /*ok=*/false);
  auto staged = stager_.stage(request(10));
  EXPECT_EQ(staged.status().message(),
            "worker " + id + " could not stage the rows: executor 0: no room");
  for (const WorkerView& w : workers_.view()) EXPECT_FALSE(w.executors[0].busy);
}

TEST_F(RowStagerTest, DroppingTellsEveryWorker) {
  add_worker(1);
  add_worker(2);
  EXPECT_EQ(stager_.drop("/data/x.npy"), 2u);
  for (const auto& link : links_) {
    auto sent = link->sent_of(MessageType::kDropRows);
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_EQ(sent[0].header["source"], "/data/x.npy");
  }
}

}  // namespace
}  // namespace lizard
