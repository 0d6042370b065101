// BlockAggregate::add_row where whole warps fold into one row: `c` is the
// same for 64 rows in a row, a [1, width] field takes every row, and `d`
// spreads rows over a field too large for a shared copy.  Launched with
// blocks of 8 warps (more than have staging tiles or private copies) and
// with one thread per row (the last warp partly empty), so every path of
// add_row runs: the warps' copies, the tile's column folds and per-value
// atomics, and the shuffles and atomics of warps without a tile.  Both
// kernels fold the same rows: sums come out doubled.
#include "lizard_program.h"

__device__ void fold_rows(const dataset_t& data, const agg_res_t& result) {
  constexpr int K = global_params_t::classes, W = global_params_t::width;
  constexpr int S = global_params_t::spread;
  lizard::BlockSum<&agg_res_t::sums, K, W> sums(result);
  lizard::BlockSum<&agg_res_t::total, 1, W> total(result);
  lizard::BlockMin<&agg_res_t::lows, K, W> lows(result);
  lizard::BlockSum<&agg_res_t::pairs, K, 2> pairs(result);
  lizard::BlockSum<&agg_res_t::wide, S, W> wide(result);
  for (const long long row : lizard::rows(data)) {
    const lizard::Row<float, W> x = lizard::load_row<W>(data.v, row);
    const int c = data.c[row];
    sums.add_row(c, x);
    total.add_row(0, x);
    lows.fold_row(c, x);
    lizard::Row<double, 2> p;
    p[0] = x[0];
    p[1] = (double)x[1] * 0.25;
    pairs.add_row(c, p);
    wide.add_row(data.d[row], x);
  }
}

extern "C" __global__ void grid_stride(global_params_t params, dataset_t data, global_state_t state,
                                       agg_res_t result) {
  fold_rows(data, result);
}

extern "C" __global__ void row_per_thread(global_params_t params, dataset_t data,
                                          global_state_t state, agg_res_t result) {
  fold_rows(data, result);
}
