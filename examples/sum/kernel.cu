// Adds every row of the partition into the column sums and counts the rows.
#include "lizard_program.h"

extern "C" __global__ void column_sums(global_params_t params, dataset_t data, global_state_t state,
                                       agg_res_t result) {
  const long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= data.rows) return;
  const double* v = data.values + row * params.dims;
  for (int j = 0; j < params.dims; ++j) atomicAdd(&result.sums[j], v[j]);
  atomicAdd((unsigned long long*)result.count, 1ull);
}
