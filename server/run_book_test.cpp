#include "server/run_book.h"

#include <gtest/gtest.h>

#include <fstream>
#include <future>

#include "dataset/npy.h"
#include "server/testing/fakes.h"

namespace lizard {
namespace {

using nlohmann::json;

const char* kConfig = R"(
sources: {cuda: kernel.cu}
dataset:
  x: {type: float64, shape: [rows]}
  y: {type: float32, shape: [rows], input: false, output: true}
aggregate: {sum: {type: float64, reduce: sum}}
iterate: [k]
)";

class RunBookTest : public ::testing::Test {
 protected:
  void SetUp() override { program_ = testing::make_test_program(kConfig); }

  std::shared_ptr<RunRecord> submit(RunBook& book, json body = {}) {
    if (!body.contains("dataset")) body["dataset"] = {{"x", {{"values", {1.0, 2.0, 3.0}}}}};
    auto req = parse_run_request(program_->image, body);
    EXPECT_TRUE(req.ok()) << req.status().message();
    return book.submit(program_, program_->image.hash, std::move(req).value());
  }

  static std::string status_of(const RunBook& book, const std::string& id) {
    auto j = book.get_json(id);
    return j.ok() ? j->value("status", "?") : j.status().message();
  }

  TempDir dir_;
  std::shared_ptr<ProgramEntry> program_;
};

TEST_F(RunBookTest, SubmittedRunsWaitInOrder) {
  RunBook book(dir_.path());
  auto r1 = submit(book, {{"executors", 2}});
  auto r2 = submit(book, {{"executors", {{"min", 1}, {"max", 3}}}});
  EXPECT_EQ(r1->id, "r1");
  EXPECT_EQ(r2->id, "r2");
  auto pending = book.pending();
  ASSERT_EQ(pending.size(), 2u);
  EXPECT_EQ(pending[0].id, "r1");
  EXPECT_EQ(pending[0].program, program_->image.hash);
  EXPECT_EQ(pending[0].min, 2);
  EXPECT_EQ(pending[0].max, 2);
  EXPECT_EQ(pending[1].min, 1);
  EXPECT_EQ(pending[1].max, 3);
  EXPECT_EQ(status_of(book, "r1"), "queued");
  EXPECT_EQ(book.find("r2"), r2);
  EXPECT_EQ(book.find("r9"), nullptr);
  EXPECT_EQ(book.get_json("r9").status().code(), Code::kNotFound);
}

TEST_F(RunBookTest, StartingARunTakesItOffTheQueue) {
  RunBook book(dir_.path());
  auto r1 = submit(book);
  submit(book);
  ASSERT_TRUE(book.start(r1, {{"w1", 0}}));
  EXPECT_EQ(status_of(book, "r1"), "running");
  json j = book.get_json("r1").value();
  EXPECT_FALSE(j.value("started_at", "").empty());
  EXPECT_TRUE(j["phases"].contains("queued_ms"));
  EXPECT_EQ(j["executors"][0]["worker"], "w1");
  auto pending = book.pending();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].id, "r2");
  EXPECT_EQ(book.list_json("running").value().size(), 1u);
  EXPECT_EQ(book.list_json("queued").value().size(), 1u);
  EXPECT_EQ(book.count_by_status()[RunStatus::kRunning], 1);
}

TEST_F(RunBookTest, CancellingAQueuedRunEndsItAndAnswersItsWaiters) {
  RunBook book(dir_.path());
  auto r1 = submit(book);
  std::promise<HttpResponse> answered;
  book.add_waiter(r1, [&](HttpResponse r) { answered.set_value(std::move(r)); });
  auto outcome = book.cancel("r1");
  ASSERT_TRUE(outcome.ok());
  EXPECT_EQ(outcome.value(), RunBook::CancelOutcome::kCancelled);
  HttpResponse resp = answered.get_future().get();
  EXPECT_EQ(resp.status, 200);
  json record = json::parse(resp.body);
  EXPECT_EQ(record["status"], "cancelled");
  EXPECT_EQ(record["error"], "cancelled before it started");
  EXPECT_TRUE(book.pending().empty());
  EXPECT_FALSE(book.start(r1, {{"w1", 0}}));
  EXPECT_EQ(book.cancel("r1").status().code(), Code::kConflict);
  EXPECT_EQ(book.cancel("r7").status().code(), Code::kNotFound);
}

TEST_F(RunBookTest, CancellingARunningRunLeavesItToItsDriver) {
  RunBook book(dir_.path());
  auto r1 = submit(book);
  ASSERT_TRUE(book.start(r1, {{"w1", 0}}));
  auto outcome = book.cancel("r1");
  ASSERT_TRUE(outcome.ok());
  EXPECT_EQ(outcome.value(), RunBook::CancelOutcome::kCancelling);
  EXPECT_TRUE(book.update(r1, [](RunRecord& r) { return r.cancel_requested; }));
  EXPECT_EQ(status_of(book, "r1"), "running");
  book.finish(r1, Status(Code::kCancelled, "cancelled"));
  EXPECT_EQ(status_of(book, "r1"), "cancelled");
  EXPECT_TRUE(book.get_json("r1").value().value("executors", json()).is_null());
}

TEST_F(RunBookTest, AWaiterOnAFinishedRunIsAnsweredAtOnce) {
  RunBook book(dir_.path());
  auto r1 = submit(book);
  book.finish(r1, runtime_error("worker w1: boom"));
  book.finish(r1, Status::Ok());  // a second finish changes nothing
  int calls = 0;
  book.add_waiter(r1, [&](HttpResponse r) {
    ++calls;
    EXPECT_EQ(json::parse(r.body)["error"], "worker w1: boom");
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(status_of(book, "r1"), "failed");
}

TEST_F(RunBookTest, FinishedRunsAndTheirFieldsSurviveARestart) {
  std::string npy_before;
  {
    RunBook book(dir_.path());
    auto r1 = submit(book);
    ASSERT_TRUE(book.start(r1, {{"w1", 0}}));
    const float y[3] = {1.5f, -2.0f, 4.0f};
    book.update(r1, [&](RunRecord& r) {
      r.iterations = 1;
      r.result = {{"aggregate", {{"sum", 6.0}}}};
      r.outputs["y"] = OutputField{
          DType::kFloat32, {3}, std::string(reinterpret_cast<const char*>(y), sizeof y)};
    });
    book.finish(r1, Status::Ok());
    npy_before = book.field_npy("r1", "y").value();
    EXPECT_EQ(npy_before, npy_bytes(DType::kFloat32, {3}, y));
  }
  RunBook again(dir_.path());
  EXPECT_EQ(status_of(again, "r1"), "done");
  json j = again.get_json("r1").value();
  EXPECT_EQ(j["result"]["aggregate"]["sum"], 6.0);
  EXPECT_EQ(j["fields"]["y"], "/runtimes/r1/fields/y.npy");
  auto npy = again.field_npy("r1", "y");
  ASSERT_TRUE(npy.ok()) << npy.status().message();
  EXPECT_EQ(npy.value(), npy_before);
  EXPECT_EQ(again.field_npy("r1", "z").status().code(), Code::kNotFound);
  // Ids go on from the restored ones.
  EXPECT_EQ(submit(again)->id, "r2");
}

// A download under way keeps the bytes it was given, sent from the record's
// own copy, when newer runs' fields push them out of memory.
TEST_F(RunBookTest, ADownloadKeepsItsFieldWhenNewerRunsPushItOutOfMemory) {
  RunBook book(dir_.path(), /*held_output_bytes=*/3 * sizeof(float));
  auto finish_run_of = [&](float v) {
    auto r = submit(book);
    EXPECT_TRUE(book.start(r, {{"w1", 0}}));
    const float y[3] = {v, v, v};
    book.update(r, [&](RunRecord& rec) {
      rec.outputs["y"] = OutputField{
          DType::kFloat32, {3}, std::string(reinterpret_cast<const char*>(y), sizeof y)};
    });
    book.finish(r, Status::Ok());
    return r;
  };
  auto first = finish_run_of(1.0f);
  auto download = book.field_download(first->id, "y");
  ASSERT_TRUE(download.ok()) << download.status().message();
  EXPECT_EQ(download->tail.data(), first->outputs.at("y").bytes->data());  // not copied
  finish_run_of(2.0f);
  EXPECT_FALSE(first->outputs.at("y").bytes);  // let go by the record
  const float ones[3] = {1.0f, 1.0f, 1.0f};
  EXPECT_EQ(download->head + std::string(download->tail), npy_bytes(DType::kFloat32, {3}, ones));
  // A download begun now reads the store.
  auto later = book.field_download(first->id, "y");
  ASSERT_TRUE(later.ok()) << later.status().message();
  EXPECT_TRUE(later->tail.empty());
  EXPECT_EQ(later->head, npy_bytes(DType::kFloat32, {3}, ones));
}

// Stored fields stay in memory for the newest runs only, up to the bound;
// older ones are read from the store, with the same bytes.
TEST_F(RunBookTest, OnlyTheNewestStoredFieldsStayInMemory) {
  RunBook book(dir_.path(), /*held_output_bytes=*/2 * 3 * sizeof(float));
  std::vector<std::shared_ptr<RunRecord>> runs;
  for (int i = 0; i < 3; ++i) {
    auto r = submit(book);
    ASSERT_TRUE(book.start(r, {{"w1", 0}}));
    const float y[3] = {1.0f * i, 2.0f * i, 3.0f * i};
    book.update(r, [&](RunRecord& rec) {
      rec.outputs["y"] = OutputField{
          DType::kFloat32, {3}, std::string(reinterpret_cast<const char*>(y), sizeof y)};
    });
    book.finish(r, Status::Ok());
    runs.push_back(r);
  }
  EXPECT_FALSE(runs[0]->outputs.at("y").bytes);
  EXPECT_TRUE(runs[1]->outputs.at("y").bytes);
  EXPECT_TRUE(runs[2]->outputs.at("y").bytes);
  for (int i = 0; i < 3; ++i) {
    const float y[3] = {1.0f * i, 2.0f * i, 3.0f * i};
    auto npy = book.field_npy(runs[i]->id, "y");
    ASSERT_TRUE(npy.ok()) << npy.status().message();
    EXPECT_EQ(npy.value(), npy_bytes(DType::kFloat32, {3}, y)) << runs[i]->id;
  }
}

TEST_F(RunBookTest, RunsUnfinishedAtARestartFailWithTheReason) {
  {
    RunBook book(dir_.path());
    auto r1 = submit(book);
    ASSERT_TRUE(book.start(r1, {{"w1", 0}}));
    submit(book);
  }
  RunBook again(dir_.path());
  json r1 = again.get_json("r1").value(), r2 = again.get_json("r2").value();
  EXPECT_EQ(r1["status"], "failed");
  EXPECT_EQ(r1["error"], "the server restarted while the run was running");
  EXPECT_EQ(r2["status"], "failed");
  EXPECT_EQ(r2["error"], "the server restarted while the run was queued");
  EXPECT_TRUE(again.pending().empty());
  // The failure is stored too: a second restart shows the same.
  RunBook third(dir_.path());
  EXPECT_EQ(third.get_json("r1").value()["error"], r1["error"]);
}

// Records written by hand or by another version may not be what the server
// writes; it must still start and list the ones it can read.
TEST_F(RunBookTest, MalformedStoredRecordsDoNotStopTheServer) {
  {
    auto store = RunStore::open(dir_.path());
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->save("r1", 1, "done", json::array({1, 2})).ok());
    ASSERT_TRUE((*store)->save("r2", 2, "done", {{"program", 5}, {"status", 7}}).ok());
    ASSERT_TRUE((*store)->save("r3", 3, "running", "text").ok());
    ASSERT_TRUE((*store)->save("r4", 4, "done", {{"runtime_id", "r4"}, {"status", "done"}}).ok());
  }
  RunBook book(dir_.path());
  auto all = book.list_json();
  ASSERT_TRUE(all.ok());
  std::vector<std::string> ids;
  for (const auto& r : all.value()) ids.push_back(r.value("runtime_id", "?"));
  EXPECT_NE(std::find(ids.begin(), ids.end(), "r4"), ids.end());
  EXPECT_EQ(status_of(book, "r4"), "done");
  for (const auto& r : all.value()) EXPECT_TRUE(r.is_object()) << r.dump();
  EXPECT_EQ(status_of(book, "r2"), "done");  // listed by its stored status
  EXPECT_EQ(book.get_json("r2").value()["runtime_id"], "r2");
  EXPECT_TRUE(book.field_npy("r2", "y").status().code() == Code::kNotFound);
  EXPECT_EQ(submit(book)->id, "r5");
}

TEST_F(RunBookTest, ProgressCountsRowsOfTheCurrentIterationOnly) {
  RunBook book(dir_.path());
  auto r1 = submit(book);
  ASSERT_TRUE(book.start(r1, {{"w1", 0}}));
  book.update(r1, [](RunRecord& r) {
    r.plan = PartitionPlan{3, {{"w1", 0, 1, 0, 3}}};
    r.progress_iteration = 2;
  });
  book.progress("w1", ProgressMsg{"r1.0", 2, 0, 2});
  book.progress("w1", ProgressMsg{"r1.0", 2, 0, 1});  // never goes back
  book.progress("w1", ProgressMsg{"r1.0", 1, 0, 3});  // an earlier iteration's
  book.progress("w1", ProgressMsg{"r9.0", 2, 0, 3});  // another run's
  json p = book.get_json("r1").value()["progress"];
  EXPECT_EQ(p["iteration"], 2);
  EXPECT_EQ(p["rows_done"], 2);
}

TEST_F(RunBookTest, ARunSaysItWaitsForACompileOnlyOnceAWorkerSaysItCompiles) {
  RunBook book(dir_.path());
  auto r1 = submit(book);
  ProgressMsg compiling;
  compiling.run_id = "r1.0";
  compiling.compiling = true;
  book.progress("w1", compiling);  // still queued: nothing to say
  EXPECT_FALSE(book.get_json("r1").value().contains("waiting_for"));
  ASSERT_TRUE(book.start(r1, {{"w1", 0}}));
  EXPECT_FALSE(book.get_json("r1").value().contains("waiting_for"));
  book.progress("w1", compiling);
  EXPECT_EQ(book.get_json("r1").value().value("waiting_for", ""), "compile");
  EXPECT_FALSE(book.get_json("r1").value().contains("compiling_build"));  // not said
}

// The record names the build its workers compile; where one worker
// compiles a quick build and another the optimised one, the run begins on
// the quick one.
TEST_F(RunBookTest, ACompilingRunNamesTheBuildItWaitsFor) {
  RunBook book(dir_.path());
  auto r1 = submit(book, {{"executors", 2}});
  ASSERT_TRUE(book.start(r1, {{"w1", 0}, {"w2", 0}}));
  ProgressMsg compiling;
  compiling.run_id = "r1.0";
  compiling.compiling = true;
  compiling.compiling_build = "optimised";
  book.progress("w1", compiling);
  EXPECT_EQ(book.get_json("r1").value().value("compiling_build", ""), "optimised");
  compiling.compiling_build = "quick";
  book.progress("w2", compiling);
  compiling.compiling_build = "optimised";
  book.progress("w1", compiling);
  EXPECT_EQ(book.get_json("r1").value().value("compiling_build", ""), "quick");
}

// A run's inline rows go once it ends (its record may stay for days); one
// still queued keeps them.
TEST_F(RunBookTest, AnEndedRunKeepsNoneOfItsInlineRows) {
  RunBook book(dir_.path());
  auto ended = submit(book);
  auto queued = submit(book);
  ASSERT_EQ(ended->request.dataset.at(0).values.size(), 3 * sizeof(double));
  ASSERT_TRUE(book.start(ended, {{"w1", 0}}));
  book.finish(ended, Status::Ok());
  EXPECT_EQ(status_of(book, ended->id), "done");
  EXPECT_TRUE(ended->request.dataset.at(0).values.empty());
  EXPECT_EQ(queued->request.dataset.at(0).values.size(), 3 * sizeof(double));
}

TEST_F(RunBookTest, RunsThatLostTheirExecutorsComeFirst) {
  RunBook book(dir_.path());
  auto r1 = submit(book, {{"executors", 3}});
  submit(book);
  ASSERT_TRUE(book.start(r1, {{"w1", 0}, {"w1", 1}, {"w2", 0}}));
  book.update(r1, [](RunRecord& r) {
    r.executors.clear();
    r.needs_executors = true;
  });
  auto pending = book.pending();
  ASSERT_EQ(pending.size(), 2u);
  EXPECT_EQ(pending[0].id, "r1");
  EXPECT_EQ(pending[0].min, 1);  // whatever it can get now
  EXPECT_EQ(pending[0].max, 3);
  ASSERT_TRUE(book.start(r1, {{"w3", 0}}));
  EXPECT_EQ(status_of(book, "r1"), "running");
  EXPECT_FALSE(book.update(r1, [](RunRecord& r) { return r.needs_executors; }));
  EXPECT_EQ(book.pending().size(), 1u);
}

TEST_F(RunBookTest, BypassesCountUntilTheRunStarts) {
  RunBook book(dir_.path());
  auto r1 = submit(book);
  book.note_bypassed({"r1", "r1", "nope"});
  EXPECT_EQ(book.pending()[0].bypassed, 2);
  ASSERT_TRUE(book.start(r1, {{"w1", 0}}));
  EXPECT_EQ(book.update(r1, [](RunRecord& r) { return r.bypassed; }), 0);
}

TEST_F(RunBookTest, ShutdownFailsTheQueuedRuns) {
  RunBook book(dir_.path());
  auto r1 = submit(book);
  auto r2 = submit(book);
  ASSERT_TRUE(book.start(r1, {{"w1", 0}}));
  std::string answer;
  book.add_waiter(r2, [&](HttpResponse r) { answer = json::parse(r.body).value("error", ""); });
  book.fail_queued("the server shut down before the run started");
  EXPECT_EQ(answer, "the server shut down before the run started");
  EXPECT_EQ(status_of(book, "r2"), "failed");
  EXPECT_EQ(status_of(book, "r1"), "running");
}

TEST_F(RunBookTest, ListingFiltersByStatusAndLeavesOutBulkyParts) {
  RunBook book(dir_.path());
  auto r1 = submit(book);
  book.update(r1, [](RunRecord& r) { r.result = {{"state", {{"x", 1}}}}; });
  book.finish(r1, Status::Ok());
  submit(book);
  auto done = book.list_json("done");
  ASSERT_TRUE(done.ok());
  ASSERT_EQ(done->size(), 1u);
  EXPECT_FALSE((*done)[0].contains("result"));
  EXPECT_FALSE((*done)[0].contains("timings"));
  EXPECT_EQ(book.list_json().value().size(), 2u);
  auto bad = book.list_json("finished");
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("queued, running, done"), std::string::npos);
  EXPECT_EQ(book.field_npy("r2", "y").status().code(), Code::kNotFound);  // not finished
}

TEST(RunBookWithoutStore, RunsStillWorkWhenTheStateDirIsUnusable) {
  TempDir dir;
  const std::string file = dir.path("not-a-dir");
  { std::ofstream(file) << "x"; }
  RunBook book(file);
  auto program = testing::make_test_program(kConfig);
  auto req = parse_run_request(program->image, {{"dataset", {{"x", {{"values", {1.0}}}}}}});
  ASSERT_TRUE(req.ok());
  auto r = book.submit(program, program->image.hash, std::move(req).value());
  book.finish(r, Status::Ok());
  EXPECT_EQ(book.get_json(r->id).value()["status"], "done");
}

}  // namespace
}  // namespace lizard
