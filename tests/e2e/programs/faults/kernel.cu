#include "lizard_program.h"

#ifdef LIZARD_CPU_BACKEND
extern "C" void exit(int);
#endif

extern "C" __global__ void step(global_params_t params, dataset_t data, global_state_t state,
                                agg_res_t result) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < data.rows) atomicAdd(result.total, data.x[i]);
  if (i != 0) return;
  if (params.mode == 1) {
    // Reads its first row again and again: a volatile load the compiler
    // must keep, so the loop stays (a loop over a local it may drop).
    const volatile float* x = data.x;
    while (x[0] == x[0]) {
    }
  }
  // A write to address 0: a segfault on the CPU backend, a fault on a GPU.
  if (params.mode == 2) *(volatile int*)(long long)(params.mode - 2) = 1;
#ifdef LIZARD_CPU_BACKEND
  if (params.mode == 3) exit(0);
#endif
}
