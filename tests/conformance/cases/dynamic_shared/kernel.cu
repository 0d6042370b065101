// Dynamic shared memory sized by the manifest (n floats, n doubles, one
// counter), declared once at file scope and once inside a device function:
// both names alias the same per-block buffer.  Each thread reads entries
// other threads wrote, so blocks must neither share nor lose the buffer.
#include "lizard_program.h"

extern __shared__ float buf[];

__device__ double* doubles(int n) {
  extern __shared__ __align__(16) unsigned char raw[];
  return reinterpret_cast<double*>(raw + n * sizeof(float));
}

extern "C" __global__ void fill(global_params_t params, dataset_t data, global_state_t state,
                                agg_res_t result) {
  const int n = params.n, t = threadIdx.x;
  double* d = doubles(n);
  unsigned long long* counter = reinterpret_cast<unsigned long long*>(d + n);
  if (t == 0) *counter = 0;
  for (int j = t; j < n; j += blockDim.x) {
    buf[j] = blockIdx.x * 1000.0f + j;
    d[j] = j * 0.5;
  }
  __syncthreads();
  unsigned long long s = 0;
  double ds = 0;
  for (int j = t; j < n; j += blockDim.x) {
    s += (unsigned long long)buf[n - 1 - j];
    ds += d[n - 1 - j];
  }
  atomicAdd(counter, s);
  atomicAdd(result.dsum, ds);
  const long long i = (long long)blockIdx.x * blockDim.x + t;
  if (i < data.rows) data.out[i] = buf[t % n];
  __syncthreads();
  if (t == 0) result.per_block[blockIdx.x] = *counter;
}
