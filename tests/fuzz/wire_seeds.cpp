// Writes a few frames made by lizard::encode() into DIR: the seed corpus of
// fuzz_wire (tests/fuzz/corpus/wire/).  Not built by default.
//
//   wire_seeds tests/fuzz/corpus/wire
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "protocol/messages.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  using lizard::MessageType;
  using nlohmann::json;
  const std::string state("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8);  // float32 {1, -2}
  const std::vector<std::pair<std::string, lizard::Message>> frames = {
      {"heartbeat", {MessageType::kHeartbeat, json::object(), ""}},
      {"hello",
       {MessageType::kHello,
        {{"hostname", "node1"},
         {"cpu", "x86_64"},
         {"backend", "cpu"},
         {"executors", {{{"name", "cpu0"}}}}},
        ""}},
      {"welcome", {MessageType::kWelcome, {{"worker_id", 3}}, ""}},
      {"program_status",
       {MessageType::kProgramStatus, {{"hash", "ab12"}, {"ok", false}, {"error", "é"}}, ""}},
      {"run_start",
       {MessageType::kRunStart,
        {{"run_id", "r1"},
         {"hash", "ab12"},
         {"params", {{"k", 2}}},
         {"parts", {{0, 4}}},
         {"fields", {"x"}}},
        std::string(16, '\x01')}},
      {"iterate", lizard::IterateMsg{"r1.0", 0}.to_message(state)},
      {"iteration_result", lizard::IterationResultMsg{"r1.0", 0, true, "", 0.25}.to_message(state)},
      {"iteration_failed",
       lizard::IterationResultMsg{"r1.0", 3, false, "CUDA error", 0}.to_message()},
      {"loop_step",
       lizard::LoopStepMsg{"r1.0", 4, true, false, "", 0.5, 0.75, true}.to_message(state + state)},
      {"run_outputs",
       {MessageType::kRunOutputs,
        {{"run_id", "r1"}, {"ok", true}, {"fields", {{{"name", "out"}, {"bytes", 8}}}}},
        state}},
  };
  for (const auto& [name, m] : frames) {
    std::ofstream out(std::string(argv[1]) + "/" + name + ".bin", std::ios::binary);
    const std::string frame = lizard::encode(m);
    out.write(frame.data(), static_cast<std::streamsize>(frame.size()));
    if (!out) {
      std::fprintf(stderr, "cannot write %s/%s.bin\n", argv[1], name.c_str());
      return 1;
    }
  }
  return 0;
}
