// Assigns each point to its nearest centroid and adds it to that centroid's
// sum and count.  `k` and `dims` are specialised params, so K and D are
// compile-time constants: rows live in registers and the loops unroll.
#include "lizard_program.h"

__device__ __forceinline__ unsigned long long mix64(unsigned long long x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__device__ __forceinline__ float unit_float(unsigned long long h) {  // in [0, 1)
  return (float)(h >> 40) * (1.0f / 16777216.0f);
}

// Synthetic data: row r belongs to blob r % k, whose centre has coordinates
// 10 * unit_float(mix64(seed ^ mix64(blob * 1000003 + dim))); each value adds
// noise uniform in [-0.5, 0.5).  Rows depend only on their index and the
// seed, so any partitioning yields the same dataset.
extern "C" __global__ void blobs(global_params_t params, dataset_t data, global_state_t state,
                                 agg_res_t result) {
  constexpr int D = params.dims;
  for (const long long i : lizard::rows(data)) {
    const unsigned long long row = (unsigned long long)(data.first_row + i);
    const unsigned long long blob = row % (unsigned long long)params.k;
    lizard::Row<float, D> p;
    for (int j = 0; j < D; ++j) {
      // __fmul_rn: rounded on its own, never fused with the addition below, so
      // that a CPU computes the same value.
      float centre =
          __fmul_rn(10.0f, unit_float(mix64(data.generate_seed ^ mix64(blob * 1000003ull + j))));
      float noise = unit_float(mix64(data.generate_seed + mix64(row * 64ull + j))) - 0.5f;
      p[j] = centre + noise;
    }
    lizard::store_row(data.points, i, p);
  }
}

extern "C" __global__ void assign(global_params_t params, dataset_t data, global_state_t state,
                                  agg_res_t result) {
  constexpr int K = params.k, D = params.dims;
  // `tf32: 1` trades exact labels for TF32 scores (see lizard_device_nearest.h).
  constexpr lizard::Precision P =
      params.tf32 ? lizard::Precision::kTF32 : lizard::Precision::kExact;
  using Nearest = lizard::NearestRow<&global_state_t::centroids, K, D, P>;
  lizard::BlockSum<&agg_res_t::sums, K, D> sums(result);
  lizard::BlockSum<&agg_res_t::counts, K> counts(result);

  // Larger tables go to the tensor cores, a warp's 32 rows at a time.
  if constexpr (Nearest::kTensorCores && K * D >= 1024) {
    const Nearest nearest(state);
    for (const lizard::WarpRow r : lizard::warp_rows(data)) {
      const lizard::Row<float, D> x = lizard::load_row<D>(data.points, r.row);
      const int best = nearest.of_warp(x);
      if (!r.valid) continue;
      data.labels[r.row] = best;
      sums.add_row(best, x);
      counts.add(best, 1);
    }
  } else {
    // Small tables: |x - c|^2 in full on the CUDA cores, where each centroid
    // value read from shared memory serves R rows of a thread (eight short
    // rows, or two long ones); for them the cheaper score of NearestRow saves
    // less than its bookkeeping costs.
    constexpr int R = D <= 16 ? 8 : 2;
    const lizard::BlockTable<&global_state_t::centroids, K, D> centroids(state);
    for (const auto rows : lizard::row_groups<R>(data)) {
      lizard::Row<float, D> x[R];
      float best_dist[R];
      int best[R];
#pragma unroll
      for (int i = 0; i < R; ++i) {
        x[i] = lizard::load_row<D>(data.points, rows[i]);
        best_dist[i] = 3.402823466e38f;
        best[i] = 0;
      }
      for (int c = 0; c < K; ++c) {
        const lizard::Row<float, D> centroid = centroids.row(c);
#pragma unroll
        for (int i = 0; i < R; ++i) {
          const float dist = lizard::distance2(x[i], centroid);
          if (dist < best_dist[i]) {  // ties go to the lower index
            best_dist[i] = dist;
            best[i] = c;
          }
        }
      }
#pragma unroll
      for (int i = 0; i < R; ++i) {
        if (!rows.valid(i)) continue;
        data.labels[rows[i]] = best[i];
        sums.add_row(best[i], x[i]);
        counts.add(best[i], 1);
      }
    }
  }
}
