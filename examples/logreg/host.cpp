// One gradient-descent step on the mean log-loss: w -= lr * grad_w / count,
// b -= lr * grad_b / count.  Done after max_iterations steps, or once the mean
// loss changed by less than tol since the previous iteration.  The weights
// start at zero unless the run request gives a state.
#include <math.h>

#include "lizard_program.h"

extern "C" int update_global_state(const global_params_t* params, const agg_res_t* result,
                                   global_state_t* state, int64_t iteration) {
  const int64_t n = *result->count;
  if (n == 0) return 1;
  for (int j = 0; j < params->dims; ++j)
    state->w[j] = (float)(state->w[j] - params->lr * ((double)result->grad_w[j] / (double)n));
  state->b = (float)(state->b - params->lr * ((double)*result->grad_b / (double)n));
  const double mean_loss = *result->loss / (double)n;
  const int converged = iteration > 0 && fabs(mean_loss - state->mean_loss) < params->tol;
  state->mean_loss = mean_loss;
  return converged || iteration + 1 >= params->max_iterations;
}
