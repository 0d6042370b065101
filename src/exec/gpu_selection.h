// GpuSelection: which GPUs a worker uses, as `lizard client --gpus` spells
// it, and the device ordinals that choice comes to on a node.
//
//   all        every GPU (the default)
//   none       no GPU: the worker runs the CPU backend
//   0  0,2     these device indices, as CUDA_VISIBLE_DEVICES numbers them
//   count=N    the first N GPUs (indices 0 … N-1)
//   auto:N     the N least loaded GPUs when the worker starts (the placement
//              rule of plan/executor_load.h: idle capacity, launch delay,
//              free memory)
//
//   Result<GpuSelection> s = parse_gpu_selection("auto:2");
//   Result<std::vector<int>> ordinals = choose_gpus(*s, load_per_device);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "plan/executor_load.h"

namespace lizard {

struct GpuSelection {
  enum class Kind { kAll, kNone, kIndices, kCount, kMostFree };
  Kind kind = Kind::kAll;
  std::vector<int> indices;  // kIndices: in the order given
  int count = 0;             // kCount, kMostFree

  static GpuSelection all() { return {}; }
  static GpuSelection none() { return {Kind::kNone, {}, 0}; }
  static GpuSelection of(std::vector<int> indices) { return {Kind::kIndices, indices, 0}; }
  // Whether choose_gpus needs each device's load (auto:N).
  bool needs_load() const { return kind == Kind::kMostFree; }
};

// Parses the --gpus text; errors say what forms are accepted.
Result<GpuSelection> parse_gpu_selection(const std::string& text);

// The text parse_gpu_selection reads back into `s` ("all", "0,2", "count=2").
std::string gpu_selection_text(const GpuSelection& s);

// The device ordinals to open, given one entry per device on this node (the
// free memory of each, in bytes; only read for auto:N).  kNone gives an
// empty list; an index or count beyond the node's devices is an error that
// names how many it has.  auto:N keeps index order among the chosen GPUs
// and prefers the lower index when free memory ties.
Result<std::vector<int>> choose_gpus(const GpuSelection& s, const std::vector<ExecutorLoad>& loads);

}  // namespace lizard
