#include "lizard_program.h"

extern "C" __global__ void step(global_params_t params, dataset_t data, global_state_t state,
                                agg_res_t result) {
  lizard::BlockSum<&agg_res_t::sum> sum(result);
  for (const long long row : lizard::rows(data)) {
    // Busy work, kept by the volatile store, that leaves the sum alone.
    unsigned long long h = (unsigned long long)row;
    for (int k = 0; k < params.spin; ++k) h = h * 6364136223846793005ull + 1442695040888963407ull;
    volatile unsigned long long sink = h;
    (void)sink;
    sum.add(0, data.x[row] + data.iteration);
  }
}
