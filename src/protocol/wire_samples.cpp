#include "protocol/wire_samples.h"

#include <string>
#include <utility>

#include "dataset/dataset_source_registry.h"
#include "protocol/messages.h"
#include "protocol/staging_messages.h"

namespace lizard {
namespace {

const std::string kState("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8);  // float32 {1, -2}

HelloMsg hello() {
  HelloMsg h;
  h.hostname = "node1";
  h.version = "0.9.0";
  h.backend = "cpu";
  h.backend_note = "no CUDA driver";
  h.cpu = {"x86_64 model", 16};
  h.slurm_job_id = "4242";
  h.toolchain = std::string(64, 'c');
  ExecutorInfo e;
  e.kind = "cpu";
  e.name = "cpu0";
  e.sm_count = 4;
  h.executors = {e};
  h.protocol = kWireVersion + 1;
  h.fold_port = 5001;
  return h;
}

RunStartMsg run_start() {
  const auto& registry = DatasetSourceRegistry::global();
  RunStartMsg m;
  m.run_id = "r1.0";
  m.hash = "ab12";
  m.params = {{"k", 2}};
  uint64_t value = 7;  // every run value, each its own
  for (const RunValueMember& v : run_value_members()) m.*v.member = value++;
  m.first_row = 4;
  m.rows = 12;
  m.parts = {{0, 4, 6}, {1, 10, 6}};
  m.fields = {registry.field("x", "inline"), registry.field("y", "path")};
  m.fields[0].bytes = 16;
  m.fields[1].path = "/data/y.npy";
  m.fields[1].format = "npy";
  m.data_roots = {"/data"};
  m.files = {{"y",
              "/data/y.npy",
              {2049, 77, 4096, 1700000000000000000, 1700000000000000000},
              "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}};
  m.progress = true;
  m.fold = {"w2", "10.0.0.2:5001", {"w5", "w6"}, 150, 3};
  return m;
}

ResourcesMsg resources() {
  ResourcesMsg m;
  m.free_memory = {1 << 20, 1 << 21};
  m.utilization = {12.5, -1};
  m.launch_delay_us = {4, -1};
  m.kept = {{{"file:1", "/data/x.npy rows 0..8", 256, "/data/x.npy", 0, 8}}, {}};
  return m;
}

}  // namespace

std::vector<WireSample> wire_samples() {
  std::vector<WireSample> s;
  auto add = [&](std::string name, Message m) { s.push_back({std::move(name), std::move(m)}); };
  add("hello", hello().to_message());
  add("welcome", WelcomeMsg{"w3", kWireVersion + 1, "wire version 3; this server speaks 2", true}
                     .to_message());
  add("program",
      ProgramMsg{"ab12", {{"config", "name: sum\n"}, {"sources", {{"k.cu", ""}}}}}.to_message());
  add("program_status", ProgramStatusMsg{"ab12", true, "é"}.to_message());
  add("run_start", run_start().to_message(std::string(16, '\x01')));
  add("run_ready",
      RunReadyMsg{"r1.0", false, "no file", 1.5, true, {2}, 64, 128, true, true}.to_message());
  add("iterate", IterateMsg{"r1.0", 0}.to_message(kState));
  add("iteration_result", IterationResultMsg{"r1.0", 0, true, "", 0.25}.to_message(kState));
  add("iteration_failed", IterationResultMsg{"r1.0", 3, false, "CUDA error", 0}.to_message());
  add("iteration_fold_failed",
      IterationResultMsg{"r1.0", 3, false, "no result from w5 within 150 s", 0, false, 3, true}
          .to_message());
  add("run_end", RunEndMsg{"r1.0", true, {"labels"}}.to_message());
  add("run_outputs", RunOutputsMsg{"r1.0", false, "lost", {{"out", 8}}}.to_message(kState));
  add("heartbeat", Message{MessageType::kHeartbeat, nlohmann::json::object()});
  add("data_chunk", DataChunkMsg{"r1.0", 1, 8, 8, 16}.to_message(kState));
  add("progress", ProgressMsg{"r1.0", 2, 1, 300, true, "quick"}.to_message());
  add("resources", resources().to_message());
  add("run_abort", RunAbortMsg{"r1.0", "cancelled"}.to_message());
  add("loop", LoopMsg{"r1.0", 1, 10, 500}.to_message(kState));
  add("loop_step",
      LoopStepMsg{"r1.0", 4, true, false, "", 0.5, 0.75, 0.1, true}.to_message(kState + kState));
  add("stage_rows",
      StageRowsMsg{
          "s1", "/data/x.npy", "npy", "float64", 8, {"/data"}, {{0, 0, 10}, {1, 10, 5}}, "9f2c41d0"}
          .to_message());
  add("rows_staged",
      RowsStagedMsg{"s1", true, "one part was kept already", {{0, 0, 4, 128, "file:1", true}}}
          .to_message());
  add("drop_rows", DropRowsMsg{"/data/x.npy"}.to_message());
  add("build_ahead", BuildAheadMsg{"5c37", {{"k", 6}}, true}.to_message());
  add("log_chunk",
      LogChunkMsg{"r1.0", {{0, 3, "hello from block 0"}, {1, 3, "hello from block 0"}}, 2, 96}
          .to_message());
  add("probe_file", ProbeFileMsg{"p1", "/data/x.npy", {"/data"}}.to_message());
  add("file_probed", FileProbedMsg{"p1",
                                   true,
                                   "(set only when not ok)",
                                   {2049, 77, 4096, 1700000000000000000, 1700000000000000000}}
                         .to_message());
  BuildOfferMsg offer;
  offer.hash = "5c37";
  offer.values = {{"k", 6}};
  offer.tier = "quick";
  offer.arch = "sm_90";
  offer.sha256 = std::string(64, 'a');
  offer.bytes = kState.size();
  add("build_offer", offer.to_message(kState));
  BuildFetchMsg fetch;
  fetch.request = 7;
  fetch.hash = "5c37";
  fetch.values = {{"k", 6}};
  fetch.tier = "fast";
  fetch.arch = "cpu";
  add("build_fetch", fetch.to_message());
  add("build_fetched",
      BuildFetchedMsg{7, true, std::string(64, 'a'), kState.size(), "(set only when not found)"}
          .to_message(kState));
  add("program_removed", ProgramRemovedMsg{"5c37"}.to_message());
  return s;
}

}  // namespace lizard
