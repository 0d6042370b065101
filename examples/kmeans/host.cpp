// Moves each centroid to the mean of its points (a centroid with no points
// stays where it is).  Done after max_iterations updates, or once no centroid
// moved more than `threshold`.  With `verbose: 1` it prints each
// iteration's largest move (`lizard logs RUN` shows the lines).
#include <math.h>
#include <stdio.h>

#include "lizard_program.h"

extern "C" int update_global_state(const global_params_t* params, const agg_res_t* result,
                                   global_state_t* state, int64_t iteration) {
  const int k = params->k, dims = params->dims;
  float max_shift = 0.0f;
  for (int c = 0; c < k; ++c) {
    const int64_t n = result->counts[c];
    if (n == 0) continue;
    double moved = 0.0;
    for (int j = 0; j < dims; ++j) {
      float mean = (float)(result->sums[c * dims + j] / (double)n);
      double d = mean - state->centroids[c * dims + j];
      moved += d * d;
      state->centroids[c * dims + j] = mean;
    }
    if ((float)sqrt(moved) > max_shift) max_shift = (float)sqrt(moved);
  }
  state->shift = max_shift;
  if (params->verbose)
    printf("iteration %lld: the centroids moved at most %g\n", (long long)iteration, max_shift);
  return iteration + 1 >= params->max_iterations || max_shift <= params->threshold;
}
