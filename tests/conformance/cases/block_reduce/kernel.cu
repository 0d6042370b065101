// Tree reductions in static shared memory with __syncthreads: a sum and a
// max per block; the last block is partial.
#include "lizard_program.h"

extern "C" __global__ void reduce(global_params_t params, dataset_t data, global_state_t state,
                                  agg_res_t result) {
  __shared__ long long sum[128];
  __shared__ int big[128];
  const unsigned t = threadIdx.x;
  const long long i = (long long)blockIdx.x * blockDim.x + t;
  const bool in = i < data.rows;
  sum[t] = in ? data.v[i] : 0;
  big[t] = in ? data.v[i] : -2147483647 - 1;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) {
      sum[t] += sum[t + s];
      big[t] = max(big[t], big[t + s]);
    }
    __syncthreads();
  }
  if (t == 0) {
    result.per_block[blockIdx.x] = sum[0];
    atomicAdd((unsigned long long*)result.total, (unsigned long long)sum[0]);
    atomicMax(result.biggest, big[0]);
  }
}
