// Atomics under contention: every thread of the grid hits the same few
// addresses in global memory (aggregate fields and dataset cells), then the
// same operations on shared memory per block.  `finish` runs after both and
// folds the final value of each exchanged cell into the exchange totals.
#include "lizard_program.h"

typedef unsigned long long ull;

extern "C" __global__ void global_ops(global_params_t params, dataset_t data, global_state_t state,
                                      agg_res_t r) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= data.rows) return;
  const unsigned u = (unsigned)i;
  atomicAdd(r.add_i32, i % 7 - 3);
  atomicAdd(r.add_u32, u);
  atomicAdd((ull*)r.add_u64, (ull)u * 1000003ull);
  atomicAdd(r.add_f32, 0.25f);
  atomicAdd(r.add_f64, i * 0.5);
  atomicSub(r.sub_i32, 3);
  atomicSub(r.sub_u32, 1u);
  atomicMin(r.min_i32, 1000 - i);
  atomicMax(r.max_i32, (i * 37) % 1001 - 500);
  atomicMin(r.min_u32, (u * 7919u) % 10007u + 5u);
  atomicMax(r.max_u32, u * 3u);
  atomicMin((ull*)r.min_u64, (ull)(u + 3) << 33);
  atomicMax((ull*)r.max_u64, (ull)u << 40);

  atomicAdd((ull*)r.exch_sum, (ull)atomicExch(&data.cells[0], u + 1));
  atomicAdd(r.exch_fsum, (double)atomicExch(&data.fcells[0], (float)i));
  unsigned old = data.cells[1], assumed;
  do {
    assumed = old;
    old = atomicCAS(&data.cells[1], assumed, assumed + 2);
  } while (old != assumed);
  ull old64 = data.cells64[0], assumed64;
  do {
    assumed64 = old64;
    old64 = atomicCAS((ull*)&data.cells64[0], assumed64, assumed64 + u);
  } while (old64 != assumed64);
  atomicAnd(&data.cells[2], ~(1u << (i % 31)));
  atomicOr(&data.cells[3], 1u << (i % 29));
  atomicXor(&data.cells[4], u * 2654435761u);
  atomicInc(&data.cells[5], 99u);
  atomicDec(&data.cells[6], 99u);
  atomicAnd((ull*)&data.cells64[1], ~(1ull << (i % 51)));
  atomicOr((ull*)&data.cells64[2], 1ull << (i % 50));
  atomicXor((ull*)&data.cells64[3], (ull)i * i << 10);
}

extern "C" __global__ void shared_ops(global_params_t params, dataset_t data, global_state_t state,
                                      agg_res_t r) {
  __shared__ int s_i32[4];
  __shared__ unsigned s_u32[8];
  __shared__ ull s_u64[2];
  __shared__ float s_f32;
  __shared__ double s_f64;
  const unsigned t = threadIdx.x;
  if (t == 0) {
    s_i32[0] = 0, s_i32[1] = 1 << 30, s_i32[2] = -(1 << 30), s_i32[3] = 0;
    for (int k = 0; k < 8; ++k) s_u32[k] = 0;
    s_u32[2] = 0xffffffffu;
    s_u64[0] = s_u64[1] = 0;
    s_f32 = 0.f;
    s_f64 = 0.0;
  }
  __syncthreads();
  const int i = blockIdx.x * blockDim.x + t;
  atomicAdd(&s_i32[0], i % 5 - 2);
  atomicMin(&s_i32[1], (i * 13) % 300 - 150);
  atomicMax(&s_i32[2], (i * 17) % 400 - 100);
  unsigned seen = atomicExch(&s_u32[7], t + 1);
  atomicAdd(&s_u32[0], t);
  atomicSub(&s_u32[1], 2u);
  atomicAnd(&s_u32[2], ~(1u << (t % 30)));
  atomicOr(&s_u32[3], 1u << (t % 21));
  atomicXor(&s_u32[4], t * 40503u);
  atomicInc(&s_u32[5], 9u);
  unsigned old = s_u32[6], assumed;
  do {
    assumed = old;
    old = atomicCAS(&s_u32[6], assumed, assumed + 3);
  } while (old != assumed);
  atomicAdd(&s_u64[0], (ull)t << 32);
  atomicAdd(&s_u64[1], (ull)seen);
  atomicAdd(&s_f32, 0.5f);
  atomicAdd(&s_f64, t * 0.25);
  __syncthreads();
  if (t == 0) {
    const int b = blockIdx.x;
    s_u64[1] += s_u32[7];  // every exchanged value once: sum(t + 1)
    for (int k = 0; k < 4; ++k) r.sh_i32[b * 4 + k] = s_i32[k];
    for (int k = 0; k < 8; ++k) r.sh_u32[b * 8 + k] = s_u32[k];
    r.sh_u32[b * 8 + 7] = 0;
    for (int k = 0; k < 2; ++k) r.sh_u64[b * 2 + k] = s_u64[k];
    r.sh_f32[b] = s_f32;
    r.sh_f64[b] = s_f64;
  }
}

extern "C" __global__ void finish(global_params_t params, dataset_t data, global_state_t state,
                                  agg_res_t r) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  *r.exch_sum += data.cells[0];
  *r.exch_fsum += data.fcells[0];
}
