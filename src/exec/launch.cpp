#include "exec/launch.h"

namespace lizard {

Result<LaunchConfig> plan_launch(const KernelStep& step, const Manifest& m, const ParamValues& p,
                                 int64_t rows, int64_t sm_count, uint32_t default_block,
                                 uint32_t max_block) {
  LaunchConfig c;
  const std::string where = "kernel '" + step.kernel + "'";
  int64_t block = default_block;
  if (step.block) {
    LIZARD_ASSIGN_OR_RETURN(block, eval_expr(*step.block, m, p, rows, sm_count));
  }
  if (block < 1 || block > max_block)
    return invalid_argument(where + ": block size " + std::to_string(block) + " is outside 1.." +
                            std::to_string(max_block));
  c.block[0] = static_cast<uint32_t>(block);
  int64_t grid = 0;
  if (step.blocks) {
    LIZARD_ASSIGN_OR_RETURN(grid, eval_expr(*step.blocks, m, p, rows, sm_count));
    if (grid < 0) return invalid_argument(where + ": `blocks` is negative");
  } else {
    int64_t threads = rows;
    if (step.threads) {
      LIZARD_ASSIGN_OR_RETURN(threads, eval_expr(*step.threads, m, p, rows, sm_count));
    }
    if (threads < 0) return invalid_argument(where + ": `threads` is negative");
    grid = (threads + block - 1) / block;
  }
  // Spread very large grids over y so that grid.x stays within the CUDA limit.
  const int64_t kMaxX = 2147483647;
  if (grid > kMaxX)
    return invalid_argument(where + ": grid of " + std::to_string(grid) + " blocks is too large");
  c.grid[0] = static_cast<uint32_t>(grid);
  if (step.shared_bytes) {
    LIZARD_ASSIGN_OR_RETURN(int64_t s, eval_expr(*step.shared_bytes, m, p, rows, sm_count));
    if (s < 0) return invalid_argument(where + ": `shared_bytes` is negative");
    c.shared_bytes = static_cast<uint64_t>(s);
  }
  return c;
}

}  // namespace lizard
