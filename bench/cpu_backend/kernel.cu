// K-means assign step written as for a GPU: one thread per point finds the
// nearest centroid, the block accumulates partial sums and counts in shared
// memory, then issues one atomicAdd per centroid component and count.
#include "lizard_program.h"

extern "C" __global__ void assign(global_params_t params, dataset_t data, global_state_t state,
                                  agg_res_t result) {
  extern __shared__ unsigned char smem[];
  const int k = params.k, dims = params.dims;
  float* s_sums = reinterpret_cast<float*>(smem);
  unsigned long long* s_counts =
      reinterpret_cast<unsigned long long*>(smem + ((k * dims * 4 + 7) & ~7));
  for (int i = threadIdx.x; i < k * dims; i += blockDim.x) s_sums[i] = 0.f;
  for (int i = threadIdx.x; i < k; i += blockDim.x) s_counts[i] = 0;
  __syncthreads();

  const int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (row < data.rows) {
    const float* p = data.points + row * dims;
    int best = 0;
    float best_d = INFINITY;
    for (int c = 0; c < k; ++c) {
      const float* q = state.centroids + c * dims;
      float d = 0.f;
      for (int j = 0; j < dims; ++j) {
        const float t = p[j] - q[j];
        d += t * t;
      }
      if (d < best_d) {
        best_d = d;
        best = c;
      }
    }
    data.labels[row] = best;
    for (int j = 0; j < dims; ++j) atomicAdd(&s_sums[best * dims + j], p[j]);
    atomicAdd(&s_counts[best], 1ull);
  }
  __syncthreads();

  for (int i = threadIdx.x; i < k * dims; i += blockDim.x) atomicAdd(&result.sums[i], s_sums[i]);
  for (int i = threadIdx.x; i < k; i += blockDim.x)
    atomicAdd(reinterpret_cast<unsigned long long*>(&result.counts[i]), s_counts[i]);
}
