// Assigns each point to its nearest centroid and accumulates per-centroid sums
// and counts.  Each block first sums into shared memory, then adds its partial
// sums to the global result with one atomic per block and centroid value.
#include "lizard_program.h"

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
    if (block_counts[c] != 0ull)
      atomicAdd((unsigned long long*)&result.counts[c], block_counts[c]);
}
