#include "server/run_record.h"

#include <gtest/gtest.h>

namespace lizard {
namespace {

using nlohmann::json;

TEST(RunRecord, StatusNamesRoundTrip) {
  for (RunStatus s : {RunStatus::kQueued, RunStatus::kRunning, RunStatus::kDone, RunStatus::kFailed,
                      RunStatus::kCancelled})
    EXPECT_EQ(parse_run_status(run_status_name(s)), s);
  EXPECT_EQ(parse_run_status("finished"), std::nullopt);
  EXPECT_EQ(parse_run_status(""), std::nullopt);
  EXPECT_FALSE(is_finished(RunStatus::kQueued));
  EXPECT_FALSE(is_finished(RunStatus::kRunning));
  EXPECT_TRUE(is_finished(RunStatus::kDone));
  EXPECT_TRUE(is_finished(RunStatus::kFailed));
  EXPECT_TRUE(is_finished(RunStatus::kCancelled));
}

RunRecord queued() {
  RunRecord r;
  r.id = "r3";
  r.hash = "abc";
  r.request.rows = 10;
  r.request.max_iterations = 5;
  r.params_json = {{"k", 2}};
  r.created_at = "2026-01-01T00:00:00Z";
  return r;
}

TEST(RunRecord, AQueuedRunShowsWhatItAskedForAndNothingItHasNot) {
  RunRecord r = queued();
  r.request.executors = {2, 0};
  json j = r.to_json();
  EXPECT_EQ(j["runtime_id"], "r3");
  EXPECT_EQ(j["program"], "abc");
  EXPECT_EQ(j["status"], "queued");
  EXPECT_EQ(j["params"]["k"], 2);
  EXPECT_EQ(j["rows"], 10);
  EXPECT_EQ(j["max_iterations"], 5);
  EXPECT_EQ(j["iterations"], 0);
  EXPECT_EQ(j["executors_requested"], (json{{"min", 2}}));  // no max: every free one
  for (const char* absent : {"executors", "started_at", "finished_at", "elapsed_ms", "plan",
                             "progress", "error", "result", "fields", "recoveries"})
    EXPECT_FALSE(j.contains(absent)) << absent;
}

TEST(RunRecord, ARunningRunShowsItsExecutorsPlanAndProgress) {
  RunRecord r = queued();
  r.status = RunStatus::kRunning;
  r.request.executors = {1, 2};
  r.started_at = "2026-01-01T00:00:01Z";
  r.executors = {{"w1", 0}, {"w2", 1}};
  r.plan = PartitionPlan{10, {{"w1", 0, 1, 0, 4}, {"w2", 1, 1, 4, 6}}};
  r.progress_iteration = 3;
  r.rows_done[{"w1", 0}] = 4;
  r.rows_done[{"w2", 1}] = 2;
  r.timings.push_back({0, 1.5, 1.0, 0.1, json::object()});
  r.timings.push_back({1, 2.5, 2.0, 0.2, {{"loss", 0.25}}});
  r.recoveries.push_back({{"resumed_at_iteration", 1}, {"reason", "lost worker w3"}});
  json j = r.to_json();
  EXPECT_EQ(j["status"], "running");
  EXPECT_EQ(j["executors_requested"], (json{{"min", 1}, {"max", 2}}));
  EXPECT_EQ(j["executors"],
            (json{{{"worker", "w1"}, {"executor", 0}}, {{"worker", "w2"}, {"executor", 1}}}));
  EXPECT_EQ(j["plan"], r.plan->to_json());
  EXPECT_EQ(j["progress"]["iteration"], 3);
  EXPECT_EQ(j["progress"]["rows"], 10);
  EXPECT_EQ(j["progress"]["rows_done"], 6);
  EXPECT_EQ(j["progress"]["executors"][1]["rows_done"], 2);
  EXPECT_EQ(j["progress"]["executors"][1]["rows"], 6);
  ASSERT_EQ(j["timings"].size(), 2u);
  EXPECT_FALSE(j["timings"][0].contains("state"));
  EXPECT_EQ(j["timings"][1]["state"]["loss"], 0.25);
  EXPECT_EQ(j["recoveries"][0]["reason"], "lost worker w3");
  EXPECT_FALSE(j.contains("finished_at"));
}

// While its workers compile its specialised values, a running run says so
// and which values; afterwards nothing of it is left.
TEST(RunRecord, ARunThatCompilesSaysForWhichValues) {
  RunRecord r = queued();
  r.status = RunStatus::kRunning;
  r.compiling = {{"dims", 2}, {"k", 4}};
  json j = r.to_json();
  EXPECT_EQ(j["waiting_for"], "compile");
  EXPECT_EQ(j["specialised"], (json{{"dims", 2}, {"k", 4}}));
  EXPECT_FALSE(j.contains("compiling_build"));
  r.compiling_build = "quick";
  EXPECT_EQ(r.to_json()["compiling_build"], "quick");
  r.compiling = nullptr;
  j = r.to_json();
  EXPECT_FALSE(j.contains("waiting_for"));
  EXPECT_FALSE(j.contains("specialised"));
  EXPECT_FALSE(j.contains("compiling_build"));
}

TEST(RunRecord, AFinishedRunLinksItsFieldsAndShowsItsError) {
  RunRecord r = queued();
  r.status = RunStatus::kFailed;
  r.error = "worker w1: out of memory";
  r.finished_at = "2026-01-01T00:00:02Z";
  r.elapsed_ms = 12.5;
  r.result = {{"state", {{"x", 1}}}};
  r.outputs["labels"] = OutputField{DType::kInt32, {10}, std::string(40, '\0')};
  json j = r.to_json();
  EXPECT_EQ(j["status"], "failed");
  EXPECT_EQ(j["error"], "worker w1: out of memory");
  EXPECT_EQ(j["elapsed_ms"], 12.5);
  EXPECT_EQ(j["result"]["state"]["x"], 1);
  EXPECT_EQ(j["fields"]["labels"], "/runtimes/r3/fields/labels.npy");
}

TEST(RunRecord, ARestoredRecordIsShownAsItWasStored) {
  RunRecord r = queued();
  r.restored = {{"runtime_id", "r3"}, {"status", "done"}, {"note", "from before"}};
  EXPECT_EQ(r.to_json(), r.restored);
}

TEST(RunRecord, ProgressWithoutAPlanCountsNothing) {
  RunRecord r = queued();
  r.progress_iteration = 0;
  json p = r.progress_json();
  EXPECT_EQ(p["rows_done"], 0);
  EXPECT_TRUE(p["executors"].empty());
  EXPECT_FALSE(r.to_json().contains("progress"));
}

}  // namespace
}  // namespace lizard
