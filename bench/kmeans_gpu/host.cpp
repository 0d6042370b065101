// Lloyd update for the benchmark program: centroids move to their means; the
// run ends after max_iterations updates.
#include "lizard_program.h"

extern "C" int update_global_state(const global_params_t* params, const agg_res_t* result,
                                   global_state_t* state, int64_t iteration) {
  for (int c = 0; c < params->k; ++c) {
    if (result->counts[c] == 0) continue;
    for (int j = 0; j < params->dims; ++j)
      state->centroids[c * params->dims + j] =
          (float)(result->sums[c * params->dims + j] / (double)result->counts[c]);
  }
  return iteration + 1 >= params->max_iterations;
}
