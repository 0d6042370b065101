// lizard::NearestRow against the loop it stands for: every row's nearest
// table row by distance2 in index order (the lowest index on a tie), by one
// thread and by a warp, on lattice points (many exact ties) and on points
// moved off the lattice by a few units in the last place (near ties).  The
// lattice lies far from the origin, where |c|^2 - 2 x.c loses most of its
// digits: only the check with distance2 gets these rows right.  TF32
// scores may pick another row, but never one farther than their bound.
#include "lizard_program.h"

template <typename Table, int K, int D>
__device__ int nearest_by_loop(const Table& table, const lizard::Row<float, D>& x) {
  float best = 3.402823466e38f;
  int index = 0;
  for (int c = 0; c < K; ++c) {
    const float d = lizard::distance2(x, table.row(c));
    if (d < best) {
      best = d;
      index = c;
    }
  }
  return index;
}

// The checks for one table: `TableField` a [K, D] state field, `XField` a
// [rows, D] dataset field.
template <auto TableField, auto XField, int K, int D>
__device__ void check_rows(const dataset_t& data, const global_state_t& state, agg_res_t& result) {
  const lizard::NearestRow<TableField, K, D> exact(state);
  const lizard::NearestRow<TableField, K, D, lizard::Precision::kTF32> tf32(state);
  lizard::BlockSum<&agg_res_t::wrong_by_thread> wrong_by_thread(result);
  lizard::BlockSum<&agg_res_t::wrong_by_warp> wrong_by_warp(result);
  lizard::BlockSum<&agg_res_t::tf32_too_far> tf32_too_far(result);
  lizard::BlockSum<&agg_res_t::checked> checked(result);
  for (const lizard::WarpRow r : lizard::warp_rows(data)) {
    lizard::Row<float, D> x = lizard::load_row<D>(data.*XField, r.row);
    if (r.row % 2 == 1) {  // off the lattice by -1, 0 or 1 units in the last place, times 4
#pragma unroll
      for (int j = 0; j < D; ++j) {
        const int step = (int)((r.row * 7 + j * 3) % 3) - 1;
        x[j] = x[j] + step * 4.0f * 1.1920929e-7f * (x[j] < 0 ? -x[j] : x[j]);
      }
    }
    const int by_thread = exact(x);
    const int by_warp = exact.of_warp(x);
    const int by_tf32 = tf32.of_warp(x);
    if (!r.valid) continue;
    const int truth = nearest_by_loop<decltype(exact), K, D>(exact, x);
    wrong_by_thread.add(0, by_thread != truth ? 1 : 0);
    wrong_by_warp.add(0, by_warp != truth ? 1 : 0);
    const float reach = sqrtf(lizard::dot(x, x)) + 8.0f * sqrtf((float)D);
    const float best = lizard::distance2(x, exact.row(truth));
    const float chosen = lizard::distance2(x, exact.row(by_tf32));
    tf32_too_far.add(0, chosen - best > 0.004f * reach * reach ? 1 : 0);
    checked.add(0, 1);
  }
}

// A table of k x dims values, in dynamic shared memory when it outgrows the
// static kind (the step gives `shared_bytes`).
extern "C" __global__ void check_large(global_params_t params, dataset_t data, global_state_t state,
                                       agg_res_t result) {
  check_rows<&global_state_t::table, &dataset_t::x, params.k, params.dims>(data, state, result);
}

// A 24 x 16 table, in static shared memory.
extern "C" __global__ void check_small(global_params_t params, dataset_t data, global_state_t state,
                                       agg_res_t result) {
  check_rows<&global_state_t::small, &dataset_t::xs, 24, 16>(data, state, result);
}
