// The device library (lizard_device.h) on both backends: rows, load_row,
// BlockTable, and block-private sums, mins and maxes of every shape, from a
// grid-stride launch and from a launch of one thread per row whose last
// warp is partly empty.  Both kernels fold the same rows, so sums and counts
// come out doubled.
#include "lizard_program.h"

__device__ void fold_rows(const global_params_t& params, const dataset_t& data,
                          const global_state_t& state, const agg_res_t& result) {
  constexpr int K = global_params_t::classes, W = global_params_t::width;
  const lizard::BlockTable<&global_state_t::weights, 1, W> weights(state);
  lizard::BlockSum<&agg_res_t::sums, K, W> sums(result);
  lizard::BlockSum<&agg_res_t::counts, K> counts(result);
  lizard::BlockSum<&agg_res_t::columns, lizard::kRunTimeSize> columns(result, W);
  lizard::BlockSum<&agg_res_t::weighted> weighted(result);
  lizard::BlockMin<&agg_res_t::smallest> smallest(result);
  lizard::BlockMax<&agg_res_t::last_row> last_row(result);
  lizard::BlockMax<&agg_res_t::class_max, K> class_max(result);
  lizard::BlockMin<&agg_res_t::class_min, K> class_min(result);
  for (const long long row : lizard::rows(data)) {
    const lizard::Row<float, W> x = lizard::load_row<W>(data.v, row);
    const int c = data.c[row];
    sums.add_row(c, x);
    counts.add(c, 1);
    for (int j = 0; j < W; ++j) columns.add(j, x[j]);
    weighted.add(0, lizard::dot(x, weights.row(0)));
    smallest.fold(0, x[0]);
    last_row.fold(0, row);
    class_max.fold(c, -0.25f * (float)row);  // negative floats, and -0.0f
    class_min.fold(c, (int)(x[2] * 2.0f) * (c + 1));
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
