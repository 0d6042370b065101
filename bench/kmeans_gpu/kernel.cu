// K-means assign step, specialised for k = 16 and dims = 32 (one warp lane
// per dimension).  Each warp takes chunks of 32 points: it loads a chunk with
// coalesced 16-byte loads into shared memory (the next chunk's loads in flight
// meanwhile), each lane finds the nearest centroid of one point, then each lane
// adds one dimension of every point into the warp's private partial sums.  At
// the end a block folds its warps' sums and issues one atomic per centroid
// component and one per centroid count.
#include "lizard_program.h"

#define KM_K 16
#define KM_D 32
#define WARPS 4
#define ROW 36  // floats per point in the shared tile: 32 + 4 of padding against bank conflicts

extern "C" __global__ void __launch_bounds__(WARPS * 32, 6)
    assign(global_params_t params, dataset_t data, global_state_t state, agg_res_t result) {
  __shared__ __align__(16) float cent[KM_K * KM_D];
  __shared__ float cnorm[KM_K];
  __shared__ __align__(16) float tile[WARPS][32 * ROW];
  __shared__ float wsum[WARPS][KM_K * KM_D];
  __shared__ int wlabel[WARPS][32];
  __shared__ unsigned long long wcount[WARPS][KM_K];
  if (params.k != KM_K || params.dims != KM_D) return;  // the host checks this too

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int i = threadIdx.x; i < KM_K * KM_D; i += blockDim.x) cent[i] = state.centroids[i];
  for (int i = threadIdx.x; i < WARPS * KM_K * KM_D; i += blockDim.x) (&wsum[0][0])[i] = 0.f;
  __syncthreads();
  if (threadIdx.x < KM_K) {
    float s = 0.f;
    for (int d = 0; d < KM_D; ++d) s += cent[threadIdx.x * KM_D + d] * cent[threadIdx.x * KM_D + d];
    cnorm[threadIdx.x] = s;
  }
  __syncthreads();

  float* t = tile[warp];
  float* ws = wsum[warp];
  int* wl = wlabel[warp];
  const float4* pts = reinterpret_cast<const float4*>(data.points);
  const int64_t rows = data.rows;
  const int64_t nchunks = (rows + 31) / 32;
  const int64_t nwarps = (int64_t)gridDim.x * WARPS;
  const int sub = lane >> 3, quarter = lane & 7;  // 4 points x 8 float4 per load round
  unsigned long long count = 0;                   // lane c < KM_K: points labelled c

  float4 buf[8];
  auto load = [&](int64_t chunk) {
    const int64_t base = chunk * 32;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int64_t p = base + sub + 4 * j;
      buf[j] = p < rows ? __ldcs(&pts[p * 8 + quarter]) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
  };

  int64_t chunk = (int64_t)blockIdx.x * WARPS + warp;
  if (chunk < nchunks) load(chunk);
  for (; chunk < nchunks; chunk += nwarps) {
#pragma unroll
    for (int j = 0; j < 8; ++j)
      *reinterpret_cast<float4*>(&t[(sub + 4 * j) * ROW + quarter * 4]) = buf[j];
    __syncwarp();
    if (chunk + nwarps < nchunks) load(chunk + nwarps);  // in flight while this chunk is used

    const int n = (int)min((int64_t)32, rows - chunk * 32);
    // All centroids at once, a quarter of the point at a time: 16 independent
    // accumulators, and the point's values stay in shared memory.
    float dot[KM_K];
#pragma unroll
    for (int k = 0; k < KM_K; ++k) dot[k] = 0.f;
#pragma unroll
    for (int q = 0; q < 8; ++q) {
      const float4 v = *reinterpret_cast<const float4*>(&t[lane * ROW + q * 4]);
#pragma unroll
      for (int k = 0; k < KM_K; ++k) {
        const float4 c = *reinterpret_cast<const float4*>(&cent[k * KM_D + q * 4]);
        dot[k] = fmaf(v.x, c.x, dot[k]);
        dot[k] = fmaf(v.y, c.y, dot[k]);
        dot[k] = fmaf(v.z, c.z, dot[k]);
        dot[k] = fmaf(v.w, c.w, dot[k]);
      }
    }
    int best = 0;
    float bestd = fmaf(-2.f, dot[0], cnorm[0]);
#pragma unroll
    for (int k = 1; k < KM_K; ++k) {
      const float s = fmaf(-2.f, dot[k], cnorm[k]);
      if (s < bestd) {
        bestd = s;
        best = k;
      }
    }
    const bool valid = lane < n;
    wl[lane] = best;
#pragma unroll
    for (int c = 0; c < KM_K; ++c) {
      const unsigned b = __ballot_sync(0xffffffffu, valid && best == c);
      if (lane == c) count += __popc(b);
    }
    __syncwarp();
    for (int p = 0; p < n; ++p) ws[wl[p] * KM_D + lane] += t[p * ROW + lane];
    __syncwarp();
  }

  if (lane < KM_K) wcount[warp][lane] = count;
  __syncthreads();
  for (int i = threadIdx.x; i < KM_K * KM_D; i += blockDim.x) {
    float s = 0.f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) s += wsum[w][i];
    atomicAdd(&result.sums[i], s);
  }
  if (threadIdx.x < KM_K) {
    unsigned long long c = 0;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) c += wcount[w][threadIdx.x];
    atomicAdd(reinterpret_cast<unsigned long long*>(&result.counts[threadIdx.x]), c);
  }
}
