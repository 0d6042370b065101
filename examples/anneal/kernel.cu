// Simulated annealing of the 8-D Rastrigin function
//   f(x) = 10 n + sum_i (x_i^2 - 10 cos(2 pi x_i)),  x_i in [-5.12, 5.12].
//
// `anneal`: every chain (one per row) runs `steps` Metropolis steps at the
// current temperature.  A step moves one coordinate by a uniform offset,
// either large (+-step_size) or small (+-step_size/50), reflected at the
// bounds.  Random numbers are counter-based: draw k of a chain in iteration t
// (data.iteration) is splitmix64(key + k * golden) with key =
// mix(chain ^ mix(t)), where a chain's own seed is its row's `seed` mixed
// with the run's seed (data.run_seed), so a chain's path depends only on
// those two seeds and the iteration, never on the partitioning or the
// device.  In one run, chains
// with equal seeds are identical; two runs with one run seed give the same
// answer, and runs with other run seeds run other chains.
//
// `partition_best`: one thread scans this partition's best_f and writes the
// partition's best into the aggregate; the server's aggregate hook keeps the
// smallest over all partitions.
#include "lizard_program.h"

#define RASTRIGIN_DIMS 8
#define RASTRIGIN_LO (-5.12f)
#define RASTRIGIN_HI 5.12f

__device__ inline unsigned long long anneal_mix(unsigned long long z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The next value of a splitmix64 stream.
__device__ inline unsigned long long anneal_next(unsigned long long* s) {
  *s += 0x9E3779B97F4A7C15ull;
  return anneal_mix(*s);
}

// A float in [0, 1) from the top 24 bits.
__device__ inline float anneal_unit(unsigned long long r) {
  return (float)(r >> 40) * (1.0f / 16777216.0f);
}

// One coordinate's term of the Rastrigin function.
__device__ inline float rastrigin_term(float t) {
  return t * t - 10.0f * cosf(6.283185307179586f * t) + 10.0f;
}

__device__ inline float anneal_reflect(float v) {
  if (v < RASTRIGIN_LO) v = 2.0f * RASTRIGIN_LO - v;
  if (v > RASTRIGIN_HI) v = 2.0f * RASTRIGIN_HI - v;
  return fminf(fmaxf(v, RASTRIGIN_LO), RASTRIGIN_HI);
}

// Runs one chain's `steps` Metropolis steps from its state in `data`, and
// writes the state back.
__device__ void anneal_chain(const global_params_t& params, const dataset_t& data,
                             const global_state_t& state, long long row) {
  typedef lizard::Row<float, RASTRIGIN_DIMS> Point;
  const unsigned long long chain =
      data.seed[row] ^ anneal_mix(data.run_seed + 0x632be59bd9b4e019ull);
  unsigned long long s = anneal_mix(chain ^ anneal_mix((unsigned long long)data.iteration + 1ull));
  Point x, g, bx;
  float best;
  if (data.iteration == 0) {  // a starting point drawn from the chain's seed
    unsigned long long s0 = anneal_mix(chain);
    for (int j = 0; j < RASTRIGIN_DIMS; ++j)
      x[j] = RASTRIGIN_LO + (RASTRIGIN_HI - RASTRIGIN_LO) * anneal_unit(anneal_next(&s0));
  } else {
    x = lizard::load_row<RASTRIGIN_DIMS>(data.x, row);
  }
  float f = 0.0f;
  for (int j = 0; j < RASTRIGIN_DIMS; ++j) {
    g[j] = rastrigin_term(x[j]);
    f += g[j];
  }
  if (data.iteration == 0) {
    best = f;
    bx = x;
  } else {
    best = data.best_f[row];
    bx = lizard::load_row<RASTRIGIN_DIMS>(data.best_x, row);
  }

  const float temperature = state.temperature;
  for (int step = 0; step < params.steps; ++step) {
    const unsigned long long r = anneal_next(&s);
    const int j = (int)(r & 7ull);
    const float width = (r & 8ull) ? params.step_size : params.step_size * 0.02f;
    const float xn = anneal_reflect(x[j] + width * (2.0f * anneal_unit(r) - 1.0f));
    const float gn = rastrigin_term(xn);
    const float delta = gn - g[j];
    bool accept = delta <= 0.0f;
    if (!accept && temperature > 0.0f)
      accept = anneal_unit(anneal_next(&s)) < expf(-delta / temperature);
    if (!accept) continue;
    x[j] = xn;
    g[j] = gn;
    f = 0.0f;
    for (int i = 0; i < RASTRIGIN_DIMS; ++i) f += g[i];
    if (f < best) {
      best = f;
      bx = x;
    }
  }
  lizard::store_row(data.x, row, x);
  lizard::store_row(data.best_x, row, bx);
  data.best_f[row] = best;
}

extern "C" __global__ void anneal(global_params_t params, dataset_t data, global_state_t state,
                                  agg_res_t result) {
  for (const long long row : lizard::rows(data)) anneal_chain(params, data, state, row);
}

extern "C" __global__ void partition_best(global_params_t params, dataset_t data,
                                          global_state_t state, agg_res_t result) {
  if (blockIdx.x != 0 || threadIdx.x != 0 || data.rows == 0) return;
  long long best = 0;
  for (long long i = 1; i < data.rows; ++i)
    if (data.best_f[i] < data.best_f[best]) best = i;
  *result.has_value = 1;
  *result.best_value = data.best_f[best];
  *result.best_row = data.first_row + best;
  for (int j = 0; j < RASTRIGIN_DIMS; ++j)
    result.best_point[j] = data.best_x[best * RASTRIGIN_DIMS + j];
}
