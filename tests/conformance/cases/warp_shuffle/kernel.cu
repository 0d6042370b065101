// Warp shuffles: __shfl_down_sync and __shfl_xor_sync reductions (every
// lane's value is checked, including lanes whose source is out of range),
// an inclusive scan with __shfl_up_sync, broadcasts with __shfl_sync, the
// width argument, and shuffles of doubles.  Threads past the last row take
// part with the value 0 and write nothing.
#include "lizard_program.h"

#define FULL 0xffffffffu

extern "C" __global__ void shuffle(global_params_t params, dataset_t data, global_state_t state,
                                   agg_res_t result) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const bool in = i < data.rows;
  const int x = in ? data.v[i] : 0;
  const int lane = threadIdx.x % warpSize;

  int down = x;
  for (int o = 16; o > 0; o >>= 1) down += __shfl_down_sync(FULL, down, o);
  int fly = x;
  for (int o = 1; o < 32; o <<= 1) fly += __shfl_xor_sync(FULL, fly, o);
  int scan = x;
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(FULL, scan, o);
    if (lane >= o) scan += y;
  }
  const int bcast = __shfl_sync(FULL, x, 3);
  int g8 = x;
  for (int o = 1; o < 8; o <<= 1) g8 += __shfl_xor_sync(FULL, g8, o, 8);
  const int b8 = __shfl_sync(FULL, x, 2, 8);
  double d = x * 0.5;
  for (int o = 16; o > 0; o >>= 1) d += __shfl_down_sync(FULL, d, o);
  if (lane == 0) atomicAdd(result.dsum, d);
  if (!in) return;
  data.down[i] = down;
  data.butterfly[i] = fly;
  data.scan[i] = scan;
  data.bcast[i] = bcast;
  data.group8[i] = g8;
  data.bcast8[i] = b8;
}
