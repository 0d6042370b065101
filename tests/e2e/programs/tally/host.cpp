#include "lizard_program.h"

extern "C" int update_global_state(const global_params_t* params, const agg_res_t* result,
                                   global_state_t* state, int64_t iteration) {
  state->total += *result->sum;
  return iteration + 1 >= params->max_iterations;
}
