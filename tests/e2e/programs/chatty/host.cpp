#include <stdio.h>

#include "lizard_program.h"

extern "C" int update_global_state(const global_params_t* params, const agg_res_t* result,
                                   global_state_t* state, int64_t iteration) {
  (void)result;
  state->seen = (int32_t)(iteration + 1);
  printf("update after iteration %lld\n", (long long)iteration);
  return iteration + 1 >= params->iterations;
}
