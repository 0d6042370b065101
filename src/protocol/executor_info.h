// ExecutorInfo: what a worker reports of each of its executors (a GPU, or
// the host's cores) in its hello and as it runs: model, architecture,
// memory, the weight the partition plan uses, and how busy the device is.
// Executors fill it in (exec/executor.h); the server lists it under
// /api/v1/workers and plans with it.
//
//   nlohmann::json j = info.to_json();
//   ExecutorInfo back = ExecutorInfo::from_json(j);
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace lizard {

struct ExecutorInfo {
  std::string kind;  // "cuda" or "cpu"
  std::string name;  // GPU or CPU model name
  int ordinal = 0;   // GPU ordinal (0 for CPU)
  std::string arch;  // "sm_90"; empty for CPU
  int sm_count = 0;  // multiprocessors; CPU: worker threads
  int clock_khz = 0;
  uint64_t total_memory = 0;
  uint64_t free_memory = 0;
  std::string driver;  // driver version, GPU only
  double weight = 1;   // capability weight used by the partition plan
  // How busy the device is, as last measured (GPUs only; < 0: unknown):
  // percent of time a kernel ran (NVML), and an empty kernel's launch delay.
  double utilization = -1;
  double launch_delay_us = -1;
  nlohmann::json to_json() const;
  static ExecutorInfo from_json(const nlohmann::json& j);
};

}  // namespace lizard
