// Run driver tests of runs resumed after a server restart: from their
// checkpoint where kernels keep nothing per row, from the start otherwise.
#include <gtest/gtest.h>

#include "dataset/npy.h"
#include "server/run_driver.h"
#include "server/testing/run_driver_fixture.h"

namespace lizard {
namespace {

using nlohmann::json;
using testing::FakeRun;
using testing::FakeWorker;
using testing::kRows;
using testing::kSums;
using testing::kSumsWithOutput;
using testing::RunDriverTest;

class RunDriverResumeTest : public RunDriverTest {
 protected:
  // A server that died with a 5-iteration run checkpointed after
  // `iterations` (with the state an undisturbed run has then); a new server
  // on the same state directory resumes it on every executor and drives it.
  void restart_after(int64_t iterations) {
    std::vector<double> x;
    for (int i = 1; i <= kRows; ++i) x.push_back(i);
    const json body = {{"dataset", {{"x", {{"values", x}}}}}, {"max_iterations", 5}};
    const Manifest& m = program_->image.manifest;
    {
      RunBook before(state_.path());
      auto req = parse_run_request(program_->image, body);
      ASSERT_TRUE(req.ok()) << req.status().message();
      auto run = before.enqueue(program_, program_->image.hash, std::move(req).value(), body);
      ASSERT_TRUE(run.ok()) << run.status().message();
      ASSERT_TRUE(before.start(*run, all_executors()));
      before.persist(*run);
      SectionBuffer st = make_section(m.state, m, ParamValues{}).value();
      SectionBuffer agg = make_section(m.aggregate, m, ParamValues{}).value();
      const double total = 55.0 * static_cast<double>(iterations), sum = 55.0;
      const int64_t steps = iterations, count = kRows;
      std::memcpy(st.data(*st.find("total")), &total, sizeof total);
      std::memcpy(st.data(*st.find("steps")), &steps, sizeof steps);
      std::memcpy(agg.data(*agg.find("sum")), &sum, sizeof sum);
      std::memcpy(agg.data(*agg.find("count")), &count, sizeof count);
      before.checkpoint(*run, {iterations, false, std::string(st.bytes.begin(), st.bytes.end()),
                               std::string(agg.bytes.begin(), agg.bytes.end())});
    }
    after_ = std::make_unique<RunBook>(state_.path());
    auto running = after_->resume(
        [this](const std::string& h) { return h == program_->image.hash ? program_ : nullptr; },
        nullptr, 5);
    ASSERT_EQ(running.size(), 1u);
    run_ = running[0];
    ASSERT_TRUE(run_->needs_executors);
    ASSERT_TRUE(workers_.claim(all_executors(), run_->id));  // what the scheduler does
    ASSERT_TRUE(after_->start(run_, all_executors()));
    after_->add_waiter(run_, [this](HttpResponse r) { finished_.set_value(json::parse(r.body)); });
    DriverContext ctx;
    ctx.book = after_.get();
    ctx.workers = &workers_;
    ctx.worker_wait_s = worker_wait_s_;
    ctx.stopping = [this] { return stopping_.load(); };
    ctx.wake_scheduler = [] {};
    ctx.worker_loop = worker_loop_;
    {
      std::lock_guard<std::mutex> l(mu_);
      driver_ = std::make_unique<RunDriver>(run_, std::move(ctx));
    }
    driver_->start([this](const std::string& id) { workers_.release_run(id); });
  }

  TempDir state_;
  std::unique_ptr<RunBook> after_;
};

TEST_F(RunDriverResumeTest, ARunResumesFromItsCheckpoint) {
  use_program(kSums);
  auto& w1 = add_worker();
  auto& w2 = add_worker();
  restart_after(2);
  json r = wait();
  ASSERT_EQ(r["status"], "done") << r.dump(2);
  EXPECT_EQ(r["result"]["state"]["total"], 5 * 55.0);  // as if nothing had happened
  EXPECT_EQ(r["result"]["state"]["steps"], 5);
  EXPECT_EQ(r["iterations"], 5);
  ASSERT_EQ(r["recoveries"].size(), 1u);
  EXPECT_EQ(r["recoveries"][0]["resumed_at_iteration"], 2);
  EXPECT_EQ(r["recoveries"][0]["reason"], "the server restarted");
  EXPECT_EQ(r["recoveries"][0]["kind"], "server_restart");
  EXPECT_EQ(r["recoveries"][0]["lost_at_iteration"], 2);
  EXPECT_EQ(r["recoveries"][0]["workers"].size(), 2u);
  for (auto* w : {&w1, &w2})  // only the iterations after the checkpoint ran
    EXPECT_EQ(iterations_sent(*w, run_->id + ".0"), (std::vector<int64_t>{2, 3, 4}));
  // The finished run leaves no checkpoint: a further restart resumes nothing.
  after_.reset();
  RunBook again(state_.path());
  EXPECT_TRUE(again.resume([](const std::string&) { return nullptr; }, nullptr, 5).empty());
  EXPECT_EQ(again.get_json(r["runtime_id"]).value()["status"], "done");
}

TEST_F(RunDriverResumeTest, ARunOnOneWorkerResumesItsLoopFromTheCheckpoint) {
  use_program(kSums);
  FakeWorker& w = add_worker();
  const Manifest& m = program_->image.manifest;
  w.loop_step = [&m](const FakeRun& run, const std::string& state, int64_t it, bool* last) {
    *last = false;
    return testing::sums_loop_step(m, run, state, it);
  };
  restart_after(3);
  json r = wait();
  ASSERT_EQ(r["status"], "done") << r.dump(2);
  EXPECT_EQ(r["result"]["state"]["total"], 5 * 55.0);
  EXPECT_EQ(r["result"]["state"]["steps"], 5);
  EXPECT_EQ(r["recoveries"][0]["resumed_at_iteration"], 3);
  auto loops = w.link()->sent_of(MessageType::kLoop);
  ASSERT_EQ(loops.size(), 1u);
  EXPECT_EQ(LoopMsg::parse(loops[0].header).value().first_iteration, 3);
}

TEST_F(RunDriverResumeTest, ARunWithPerRowValuesStartsOver) {
  use_program(kSumsWithOutput);
  auto& w1 = add_worker();
  add_worker();
  restart_after(3);
  json r = wait();
  ASSERT_EQ(r["status"], "done") << r.dump(2);
  EXPECT_EQ(r["result"]["state"]["total"], 5 * 55.0);
  EXPECT_EQ(r["recoveries"][0]["resumed_at_iteration"], 0);
  EXPECT_EQ(iterations_sent(w1, run_->id + ".0"), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  const std::vector<double> y = doubled_rows();
  auto npy = after_->field_npy(run_->id, "y");
  ASSERT_TRUE(npy.ok()) << npy.status().message();
  EXPECT_EQ(npy.value(), npy_bytes(DType::kFloat64, {kRows}, y.data()));
}

}  // namespace
}  // namespace lizard
