// Adds every row of the partition into the column sums and counts the rows.
// `dims` is an ordinary param, so the column sums' size is given at run time.
#include "lizard_program.h"

extern "C" __global__ void column_sums(global_params_t params, dataset_t data, global_state_t state,
                                       agg_res_t result) {
  lizard::BlockSum<&agg_res_t::sums, lizard::kRunTimeSize> sums(result, params.dims);
  lizard::BlockSum<&agg_res_t::count> count(result);
  for (const long long row : lizard::rows(data)) {
    const double* v = data.values + row * params.dims;
    for (int j = 0; j < params.dims; ++j) sums.add(j, v[j]);
    count.add(0, 1);
  }
}
