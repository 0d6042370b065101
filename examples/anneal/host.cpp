// Server-side hooks of the annealing example: the starting temperature, the
// fold of the partitions' best points, and the cooling schedule.
#include "lizard_program.h"

extern "C" void init_global_state(const global_params_t* params, global_state_t* state) {
  state->temperature = params->initial_temperature;
  state->iteration = 0;
}

// The running result starts as zeros, i.e. has_value == 0: empty.  Keeps the
// smaller value; on a tie, the lower row.
extern "C" void aggregate(const global_params_t* params, agg_res_t* running,
                          const agg_res_t* partial) {
  (void)params;
  if (!*partial->has_value) return;
  const bool better =
      !*running->has_value || *partial->best_value < *running->best_value ||
      (*partial->best_value == *running->best_value && *partial->best_row < *running->best_row);
  if (!better) return;
  *running->has_value = 1;
  *running->best_value = *partial->best_value;
  *running->best_row = *partial->best_row;
  for (int j = 0; j < 8; ++j) running->best_point[j] = partial->best_point[j];
}

extern "C" int update_global_state(const global_params_t* params, const agg_res_t* result,
                                   global_state_t* state, int64_t iteration) {
  (void)result;
  state->temperature *= params->cooling;
  state->iteration = (int32_t)(iteration + 1);
  return iteration + 1 >= params->max_iterations;
}
