// LaunchConfig: the grid, block and shared memory of one `iterate` step for a
// partition, computed from the manifest's expressions.  Shared by backends.
//
//   Result<LaunchConfig> c = plan_launch(step, manifest, params, rows, sm_count, 256);
#pragma once

#include <cstdint>

#include "common/status.h"
#include "program/layout.h"

namespace lizard {

struct LaunchConfig {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint64_t shared_bytes = 0;
  uint64_t total_blocks() const { return uint64_t{grid[0]} * grid[1] * grid[2]; }
  bool empty() const { return total_blocks() == 0; }
};

// `default_block` is used when the step names no `block`.  With `threads`
// (default: rows) the grid is ceil(threads / block); with `blocks` it is that.
Result<LaunchConfig> plan_launch(const KernelStep& step, const Manifest& m, const ParamValues& p,
                                 int64_t rows, int64_t sm_count, uint32_t default_block,
                                 uint32_t max_block = 1024);

}  // namespace lizard
