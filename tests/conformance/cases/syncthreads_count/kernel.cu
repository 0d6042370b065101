// Block-wide votes: __syncthreads_count, __syncthreads_and, __syncthreads_or.
// Threads past the last row take part with false predicates.
#include "lizard_program.h"

extern "C" __global__ void votes(global_params_t params, dataset_t data, global_state_t state,
                                 agg_res_t result) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const bool in = i < data.rows;
  const int v = in ? data.v[i] : 0;
  const int count = __syncthreads_count(in && v % 3 == 0);
  const int all = __syncthreads_and(!in || v != 150);
  const int any = __syncthreads_or(in && v == 77);
  if (threadIdx.x == 0) {
    result.count[blockIdx.x] = count;
    result.all[blockIdx.x] = all != 0;
    result.any[blockIdx.x] = any != 0;
  }
}
