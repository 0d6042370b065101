// RunPhases: the record's `phases` JSON names only the phases that are over,
// under the keys and with the values the REST API has always given, and a
// stored record's phases read back the same.
#include "server/run_phases.h"

#include <gtest/gtest.h>

namespace lizard {
namespace {

using nlohmann::json;

TEST(RunPhasesTest, NamesOnlyThePhasesThatAreSet) {
  RunPhases p;
  EXPECT_EQ(p.to_json(), json::object());
  p.queued_ms = 0.5;
  p.worker_loop = false;
  EXPECT_EQ(p.to_json(), (json{{"queued_ms", 0.5}, {"worker_loop", false}}));
}

TEST(RunPhasesTest, EveryFieldHasItsKeyAndType) {
  RunPhases p;
  p.queued_ms = 1.5;
  p.planning_ms = 0.25;
  p.loading_ms = 12;
  p.compile_ms = 0;
  p.compile_cache_hit = true;
  p.uploads_cached = false;
  p.file_bytes_read = 4096;
  p.file_bytes_kept = 0;
  p.worker_loop = true;
  p.iterations_ms = 7.75;
  const json j = p.to_json();
  EXPECT_EQ(j, json::parse(R"({"queued_ms": 1.5, "planning_ms": 0.25, "loading_ms": 12.0,
    "compile_ms": 0.0, "compile_cache_hit": true, "uploads_cached": false,
    "file_bytes_read": 4096, "file_bytes_kept": 0, "worker_loop": true,
    "iterations_ms": 7.75})"));
  EXPECT_TRUE(j["file_bytes_read"].is_number_unsigned());
  EXPECT_TRUE(j["compile_ms"].is_number_float());
  EXPECT_EQ(RunPhases::from_json(j).to_json(), j);
}

TEST(RunPhasesTest, AStoredRecordsPhasesReadBackLeavingWhatTheyDoNotKnow) {
  const json stored = json::parse(
      R"({"queued_ms": 3, "worker_loop": "yes", "file_bytes_kept": 8, "later_phase_ms": 1})");
  const RunPhases p = RunPhases::from_json(stored);
  EXPECT_EQ(p.queued_ms, 3.0);
  EXPECT_FALSE(p.worker_loop.has_value());  // not a boolean
  EXPECT_EQ(p.file_bytes_kept, 8u);
  EXPECT_EQ(p.to_json(), (json{{"queued_ms", 3.0}, {"file_bytes_kept", 8u}}));
  EXPECT_EQ(RunPhases::from_json(json()).to_json(), json::object());
}

}  // namespace
}  // namespace lizard
