// Grid-stride loops over a grid sized from the device (`blocks: sm_count * 2`),
// and a launch of `threads: rows - 10`; no barriers, so the CPU backend runs
// these threads in a plain loop.  Three iterations: `mark` persists.
#include "lizard_program.h"

extern "C" __global__ void stride(global_params_t params, dataset_t data, global_state_t state,
                                  agg_res_t result) {
  if (blockIdx.x >= gridDim.x || blockDim.x != 32 || gridDim.y != 1 || blockDim.z != 1)
    atomicAdd(result.bad, 1);
  const long long step = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < data.rows; i += step) {
    data.out[i] = 2 * data.v[i] + 1;
    atomicAdd((unsigned long long*)result.covered, 1ull);
    atomicAdd((unsigned long long*)result.total, (unsigned long long)(long long)data.v[i]);
  }
}

extern "C" __global__ void tail(global_params_t params, dataset_t data, global_state_t state,
                                agg_res_t result) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < data.rows - 10) data.mark[i] += 1;
}
