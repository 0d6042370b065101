// Warp votes: __activemask, __ballot_sync, __any_sync, __all_sync, and a
// ballot over a sub-mask taken by the first 8 lanes only.  Blocks of 48
// threads leave the second warp of each block half full.
#include "lizard_program.h"

extern "C" __global__ void vote(global_params_t params, dataset_t data, global_state_t state,
                                agg_res_t result) {
  const unsigned mask = __activemask();
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const bool in = i < data.rows;
  const int x = in ? data.v[i] : 0;
  const int lane = threadIdx.x % 32;
  const unsigned b = __ballot_sync(mask, x & 1);
  const int any = __any_sync(mask, x > 40);
  const int all = __all_sync(mask, x >= 0);
  unsigned low = 0xdeadbeefu;
  if (lane < 8) low = __ballot_sync(0xffu, x % 3 == 0);
  __syncwarp(mask);
  if (!in) return;
  data.active[i] = mask;
  data.ballot[i] = b;
  data.any[i] = any;
  data.all[i] = all;
  data.low8[i] = low;
}
