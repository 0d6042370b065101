// Assigns each point to its nearest centroid and accumulates per-centroid sums
// and counts.  Each block first sums into shared memory, then adds its partial
// sums to the global result with one atomic per block and centroid value.
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
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= data.rows) return;
  const unsigned long long row = (unsigned long long)(data.first_row + i);
  const unsigned long long blob = row % (unsigned long long)params.k;
  for (int j = 0; j < params.dims; ++j) {
    float centre = 10.0f * unit_float(mix64(data.generate_seed ^ mix64(blob * 1000003ull + j)));
    float noise = unit_float(mix64(data.generate_seed + mix64(row * 64ull + j))) - 0.5f;
    data.points[i * params.dims + j] = centre + noise;
  }
}

extern "C" __global__ void assign(global_params_t params, dataset_t data, global_state_t state,
                                  agg_res_t result) {
  extern __shared__ unsigned char smem[];
  const int k = params.k, dims = params.dims;
  unsigned long long* block_counts = (unsigned long long*)smem;
  float* block_sums = (float*)(block_counts + k);
  for (int i = threadIdx.x; i < k * dims; i += blockDim.x) block_sums[i] = 0.0f;
  for (int i = threadIdx.x; i < k; i += blockDim.x) block_counts[i] = 0ull;
  __syncthreads();

  const long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (row < data.rows) {
    const float* p = data.points + row * dims;
    int best = 0;
    float best_dist = 3.402823466e38f;
    for (int c = 0; c < k; ++c) {
      const float* q = state.centroids + c * dims;
      float dist = 0.0f;
      for (int j = 0; j < dims; ++j) {
        float diff = p[j] - q[j];
        dist += diff * diff;
      }
      if (dist < best_dist) {
        best_dist = dist;
        best = c;
      }
    }
    data.labels[row] = best;
    for (int j = 0; j < dims; ++j) atomicAdd(&block_sums[best * dims + j], p[j]);
    atomicAdd(&block_counts[best], 1ull);
  }
  __syncthreads();

  for (int i = threadIdx.x; i < k * dims; i += blockDim.x)
    if (block_counts[i / dims] != 0ull) atomicAdd(&result.sums[i], block_sums[i]);
  for (int c = threadIdx.x; c < k; c += blockDim.x)
    if (block_counts[c] != 0ull) atomicAdd((unsigned long long*)&result.counts[c], block_counts[c]);
}
