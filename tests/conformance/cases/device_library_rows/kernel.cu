// The device library with rows wide enough (32 floats, 128 bytes) for the
// warp-staged path of load_row and a [classes, width] BlockSum in shared
// memory: from a grid-stride launch of full warps, and from a launch of one
// thread per row whose last warp is partly empty.  Both kernels fold the same
// rows, so sums, counts and scores come out doubled; `copy` gets every row.
#include "lizard_program.h"

__device__ void fold_rows(const global_params_t& params, const dataset_t& data,
                          const global_state_t& state, const agg_res_t& result) {
  constexpr int K = global_params_t::classes, W = global_params_t::width;
  const lizard::BlockTable<&global_state_t::table, K, W> table(state);
  lizard::BlockSum<&agg_res_t::sums, K, W> sums(result);
  lizard::BlockSum<&agg_res_t::counts, K> counts(result);
  lizard::BlockSum<&agg_res_t::scores, K> scores(result);
  for (const long long row : lizard::rows(data)) {
    const lizard::Row<float, W> x = lizard::load_row<W>(data.v, row);
    const int c = data.c[row];
    sums.add_row(c, x);
    counts.add(c, 1);
    scores.add(c, lizard::dot(x, table.row(c)));
    lizard::store_row(data.copy, row, x);
  }
}

extern "C" __global__ void grid_stride(global_params_t params, dataset_t data, global_state_t state,
                                       agg_res_t result) {
  fold_rows(params, data, state, result);
}

extern "C" __global__ void row_per_thread(global_params_t params, dataset_t data,
                                          global_state_t state, agg_res_t result) {
  fold_rows(params, data, state, result);
}
