#include "cli/recovery_notes.h"

#include <gtest/gtest.h>

namespace lizard {
namespace {

using nlohmann::json;

json lost_w2(bool planned) {
  json e = {{"kind", "worker_lost"},
            {"lost_at_iteration", 39},
            {"workers_lost", {"w2"}},
            {"resumed_at_iteration", 39},
            {"iterations_completed", 39},
            {"reason", "iteration 39: lost worker w2: it left during the run"}};
  if (planned) e["workers"] = {"w1"};
  return e;
}

json running_with(json recoveries) {
  return {{"runtime_id", "r50"}, {"status", "running"}, {"recoveries", std::move(recoveries)}};
}

TEST(RecoveryLine, SaysWhoWasLostWhereAndWhereTheRunGoesOn) {
  EXPECT_EQ(recovery_line(lost_w2(true)),
            "worker w2 lost at iteration 39: re-planned over 1 worker, resuming at 39");
  json over = lost_w2(true);
  over["resumed_at_iteration"] = 0;
  over["workers"] = {"w1", "w3"};
  EXPECT_EQ(recovery_line(over),
            "worker w2 lost at iteration 39: re-planned over 2 workers, starting over at "
            "iteration 0");
  json gathering = lost_w2(true);
  gathering["gathering_outputs"] = true;
  gathering["resumed_at_iteration"] = 0;
  EXPECT_EQ(recovery_line(gathering),
            "worker w2 lost while its outputs were gathered: re-planned over 1 worker, starting "
            "over at iteration 0");
}

TEST(RecoveryLine, ServerRestarts) {
  EXPECT_EQ(recovery_line({{"kind", "server_restart"},
                           {"lost_at_iteration", 12},
                           {"resumed_at_iteration", 12},
                           {"reason", "the server restarted"}}),
            "server restarted at iteration 12: resuming at 12");
  // Without a checkpoint (kernels keep per-row values) the run starts over.
  EXPECT_EQ(recovery_line({{"kind", "server_restart"},
                           {"resumed_at_iteration", 0},
                           {"reason", "the server restarted"}}),
            "server restarted: starting over at iteration 0");
}

TEST(RecoveryLine, AnEntryOfAnOlderServerStillReads) {
  EXPECT_EQ(recovery_line({{"resumed_at_iteration", 4}, {"reason", "iteration 4: lost worker w2"}}),
            "recovered (iteration 4: lost worker w2): resuming at 4");
}

TEST(RecoveryNotes, EachEntryIsPrintedOnceWhenItsPlanIsKnown) {
  RecoveryNotes notes;
  EXPECT_EQ(notes.new_lines(running_with(json::array()), 0), "");
  EXPECT_EQ(notes.new_lines(running_with({lost_w2(false)}), 0.1), "");  // not planned yet
  const std::string line =
      "worker w2 lost at iteration 39: re-planned over 1 worker, resuming at 39\n";
  EXPECT_EQ(notes.new_lines(running_with({lost_w2(true)}), 0.2), line);
  EXPECT_EQ(notes.new_lines(running_with({lost_w2(true)}), 0.3), "");  // once only
  json restart = {{"kind", "server_restart"},
                  {"lost_at_iteration", 41},
                  {"resumed_at_iteration", 41},
                  {"reason", "the server restarted"}};
  EXPECT_EQ(notes.new_lines(running_with({lost_w2(true), restart}), 0.4),
            "server restarted at iteration 41: resuming at 41\n");
}

TEST(RecoveryNotes, AnUnplannedEntryIsPrintedAfterAWaitOrAtTheEnd) {
  RecoveryNotes waited;
  EXPECT_EQ(waited.new_lines(running_with({lost_w2(false)}), 10), "");
  EXPECT_EQ(waited.new_lines(running_with({lost_w2(false)}), 10 + RecoveryNotes::kPlanWait_s),
            "worker w2 lost at iteration 39: re-planning, resuming at 39\n");
  RecoveryNotes ended;
  json failed = running_with({lost_w2(false)});
  failed["status"] = "failed";
  EXPECT_EQ(ended.new_lines(failed, 0),
            "worker w2 lost at iteration 39: re-planning, resuming at 39\n");
  // A later entry means the earlier one's attempt is over.
  RecoveryNotes superseded;
  json second = lost_w2(false);
  second["workers_lost"] = {"w1"};
  EXPECT_EQ(superseded.new_lines(running_with({lost_w2(false), second}), 0),
            "worker w2 lost at iteration 39: re-planning, resuming at 39\n");
}

}  // namespace
}  // namespace lizard
