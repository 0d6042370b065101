// The data_load benchmark's measurements below lizard's REST path: the
// machine's floors (reading the page cache into pinned memory, copying
// pinned and pageable memory to a GPU) and the stages of one executor's load
// (the worker's read into memory, the hop into an executor process, the
// executor's copy, and the executor reading the file itself).
//
//   Floors f = measure_floors(path, offset, bytes);
//   nlohmann::json stages = measure_stages(path, rows, f.gpus > 0);
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace bench {

struct Floors {
  int gpus = 0;  // CUDA devices found (0: the CPU backend's figures only)
  bool pinned = false;
  int threads = 1;
  double read_one_thread_gbs = 0;  // page cache -> pinned (or plain) memory
  double read_threads_gbs = 0;     // the same with `threads` threads
  double h2d_pinned_gbs = -1;      // pinned host -> GPU 0 (< 0: no GPU)
  double h2d_pageable_gbs = -1;    // pageable host -> GPU 0
  nlohmann::json to_json() const;
};

// Floors over bytes [offset, offset + bytes) of the file at `path`.
Floors measure_floors(const std::string& path, uint64_t offset, uint64_t bytes);

// One executor's load of `rows` float32 rows of the .npy at `path`, by stage,
// in GB/s: on a GPU when `gpu`, else on the CPU backend.
nlohmann::json measure_stages(const std::string& path, int64_t rows, bool gpu);

}  // namespace bench
