#include <time.h>

#include "lizard_program.h"

extern "C" int update_global_state(const global_params_t* params, const agg_res_t* result,
                                   global_state_t* state, int64_t iteration) {
  state->total += *result->sum;
  if (params->pause_ms > 0) {
    const struct timespec pause = {params->pause_ms / 1000, (params->pause_ms % 1000) * 1000000L};
    nanosleep(&pause, nullptr);
  }
  return iteration + 1 >= params->max_iterations;
}
