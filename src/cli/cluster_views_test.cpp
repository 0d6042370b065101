#include "cli/cluster_views.h"

#include <gtest/gtest.h>

namespace lizard {
namespace {

using nlohmann::json;

TEST(ClusterViews, RunsTableLinesUpColumns) {
  json runs = json::parse(R"([
    {"runtime_id": "r1", "status": "done", "owner": "alice", "program_name": "K-Means", "iterations": 3,
     "max_iterations": 50, "rows": 2048, "created_at": "2026-11-22T03:29:59Z", "elapsed_ms": 17.1},
    {"runtime_id": "r12", "status": "running", "program_name": "Column sums", "iterations": 0,
     "max_iterations": 1, "rows": 65536, "created_at": "2026-11-22T03:30:01Z"}])");
  EXPECT_EQ(runs_table(runs),
            "ID   STATUS   OWNER  PROGRAM      ITERATIONS  ROWS    CREATED               ELAPSED\n"
            "r1   done     alice  K-Means      3/50        2,048   2026-11-22T03:29:59Z  17 ms\n"
            "r12  running  -      Column sums  0/1         65,536  2026-11-22T03:30:01Z  -\n");
  EXPECT_EQ(runs_table(json::array()), "no runs\n");
}

// A running run shows the time since it started, not "-".
TEST(ClusterViews, RunsTableShowsARunningRunsTimeSoFar) {
  json runs = json::parse(R"([
    {"runtime_id": "r12", "status": "running", "program_name": "K-Means", "iterations": 4,
     "max_iterations": 50, "rows": 10, "created_at": "2026-11-22T03:30:00Z",
     "started_at": "2026-11-22T03:30:01Z"}])");
  const std::time_t now = *parse_utc("2026-11-22T03:30:13Z");
  EXPECT_EQ(runs_table(runs, now),
            "ID   STATUS   OWNER  PROGRAM  ITERATIONS  ROWS  CREATED               ELAPSED\n"
            "r12  running  -      K-Means  4/50        10    2026-11-22T03:30:00Z  12.00 s\n");
  EXPECT_EQ(*parse_utc("1970-01-01T00:01:00Z"), 60);
  EXPECT_FALSE(parse_utc("yesterday"));
}

TEST(ClusterViews, RunSummaryShowsEachRecoveryAsLizardRunDoes) {
  json r = json::parse(R"({
    "runtime_id": "r5", "status": "running", "program": "ca65272aed9c97c4", "program_name": "tally",
    "created_at": "T0", "iterations": 40, "max_iterations": 50, "rows": 6,
    "recoveries": [{"kind": "worker_lost", "lost_at_iteration": 39, "workers_lost": ["w2"],
                    "resumed_at_iteration": 39, "workers": ["w1"], "reason": "lost worker w2"},
                   {"resumed_at_iteration": 0, "reason": "an older server's entry"}]})");
  const std::string summary = run_summary(r);
  EXPECT_NE(summary.find("  recovered   worker w2 lost at iteration 39: re-planned over 1 worker, "
                         "resuming at 39 (lost worker w2)\n"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("  recovered   an older server's entry\n"), std::string::npos) << summary;
}

TEST(ClusterViews, RunSummaryShowsErrorOrResult) {
  json failed = json::parse(R"({
    "runtime_id": "r4", "status": "failed", "program": "aee2cfd263b46557730810704a36ebae",
    "program_name": "trap", "created_at": "T0", "started_at": "T1", "finished_at": "T2",
    "elapsed_ms": 13.06, "iterations": 0, "max_iterations": 1000, "rows": 8,
    "plan": {"executors": [{"worker": "w1", "executor": 0}]},
    "error": "iteration 0: worker w1: kernel 'go': __trap() called"})");
  EXPECT_EQ(run_summary(failed),
            "r4: failed\n"
            "  program     trap (aee2cfd263b4)\n"
            "  created     T0\n"
            "  started     T1\n"
            "  finished    T2 (13 ms)\n"
            "  iterations  0 of at most 1000\n"
            "  rows        8\n"
            "  executors   w1/0\n"
            "  error       iteration 0: worker w1: kernel 'go': __trap() called\n");

  json done = json::parse(R"({
    "runtime_id": "r1", "status": "done", "program": "ca65272aed9c97c4", "program_name": "K-Means",
    "created_at": "T0", "iterations": 2, "max_iterations": 50, "rows": 6,
    "executors": [{"worker": "w1", "executor": 0}, {"worker": "w2", "executor": 1}],
    "fields": {"centroids": "/runtimes/r1/fields/centroids.npy", "counts": "/runtimes/r1/fields/counts.npy"},
    "result": {"state": {"centroids": [[0.5, 0.5], [9.5, 9.5]], "shift": 0.0},
               "aggregate": {"counts": [3, 3]}}})");
  EXPECT_EQ(run_summary(done),
            "r1: done\n"
            "  program     K-Means (ca65272aed9c)\n"
            "  created     T0\n"
            "  iterations  2 of at most 50\n"
            "  rows        6\n"
            "  executors   w1/0, w2/1\n"
            "  fields      centroids counts\n"
            "result:\n"
            "  centroids = [[0.5,0.5],[9.5,9.5]]\n"
            "  shift = 0.0\n"
            "  counts = [3,3]\n");
}

TEST(ClusterViews, LongValuesAreGivenByTheirShape) {
  json big = json::array();
  for (int i = 0; i < 64; ++i) big.push_back(json::array({1.25, 2.5, 3.75}));
  json record = {{"result", {{"state", {{"centroids", big}}}, {"aggregate", json::object()}}}};
  EXPECT_EQ(result_lines(record), "centroids: 64x3 values (--out DIR writes centroids.npy)\n");
  EXPECT_EQ(result_lines(record, "res"), "centroids: 64x3 values (in res/centroids.npy)\n");
  EXPECT_EQ(result_lines(json::object()), "");
}

TEST(ClusterViews, WorkersShowExecutorsMemoryRunsProgramsByNameAndFoldLinks) {
  json clients = json::parse(R"([{
    "id": "w1", "address": "10.0.0.5:4431", "connected_at": "T0", "fold_address": "10.0.0.5:40123",
    "hardware": {"hostname": "gpu7", "backend": "cuda", "backend_note": "",
      "executors": [
        {"ordinal": 0, "kind": "cuda", "name": "NVIDIA H100", "arch": "sm_90", "sm_count": 132,
         "free_memory": 80530636800, "total_memory": 85520809984, "run": "r3"},
        {"ordinal": 2, "kind": "cuda", "name": "NVIDIA H100", "arch": "sm_90", "sm_count": 132,
         "free_memory": 85520809984, "total_memory": 85520809984, "run": null}]},
    "programs": {"ca65272aed9c97c458574bded0bc10a5": "ready", "f3fa903d8bc373c6": {"error": "log"}}
  }, {
    "id": "w2", "address": "10.0.0.6:4431", "connected_at": "T1", "fold_address": null,
    "hardware": {"hostname": "cpu1", "backend": "cpu", "backend_note": "--gpus none: using the CPU backend",
      "executors": [{"ordinal": 0, "kind": "cpu", "name": "AMD EPYC", "sm_count": 2,
                     "free_memory": 1073741824, "total_memory": 2147483648, "run": null}]},
    "programs": {}
  }])");
  json programs =
      json::parse(R"([{"hash": "ca65272aed9c97c458574bded0bc10a5", "name": "K-Means"}])");
  EXPECT_EQ(
      workers_view(clients, programs),
      "w1  gpu7  10.0.0.5:4431  cuda backend, joined T0\n"
      "    executor 0  cuda  NVIDIA H100  sm_90  132 SMs  75.0 GiB of 79.6 GiB free  running r3\n"
      "    executor 2  cuda  NVIDIA H100  sm_90  132 SMs  79.6 GiB of 79.6 GiB free  idle\n"
      "    programs: K-Means (ca65272aed9c) ready, ? (f3fa903d8bc3) did not build\n"
      "    fold links: 10.0.0.5:40123\n"
      "w2  cpu1  10.0.0.6:4431  cpu backend, joined T1\n"
      "    note: --gpus none: using the CPU backend\n"
      "    executor 0  cpu  AMD EPYC  2 threads  1.0 GiB of 2.0 GiB free  idle\n"
      "    programs: none built\n"
      "    fold links: none (--fold-port -1): its runs fold at the server\n");
  EXPECT_EQ(workers_view(json::array(), json::array()),
            "no worker is connected (start one with `lizard client -a SERVER`)\n");
}

TEST(ClusterViews, BytesAndDurations) {
  EXPECT_EQ(bytes_text(17), "17 B");
  EXPECT_EQ(bytes_text(12 * 1024), "12.0 KiB");
  EXPECT_EQ(bytes_text(uint64_t{3} << 29), "1.5 GiB");
  EXPECT_EQ(duration_text(45.4), "45 ms");
  EXPECT_EQ(duration_text(1234), "1.23 s");
  EXPECT_EQ(duration_text(123000), "2:03");
}

}  // namespace
}  // namespace lizard
