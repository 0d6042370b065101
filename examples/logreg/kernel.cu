// Gradient of the log-loss of logistic regression, summed over the partition.
// For a row (x, y) with z = w.x + b and p = sigmoid(z), the row adds
// (p - y) x to grad_w, (p - y) to grad_b and
// log(1 + e^z) - y z = max(z, 0) - y z + log1p(e^-|z|) to loss.  Each block
// sums into shared memory first, then adds its partial sums to the result
// with one atomic per block and value.
#include "lizard_program.h"

extern "C" __global__ void gradient(global_params_t params, dataset_t data, global_state_t state,
                                    agg_res_t result) {
  extern __shared__ unsigned char smem[];
  const int dims = params.dims;
  double* block_loss = (double*)smem;
  unsigned long long* block_count = (unsigned long long*)(smem + 8);
  float* block_grad = (float*)(smem + 16);  // dims weights, then the bias
  for (int i = threadIdx.x; i <= dims; i += blockDim.x) block_grad[i] = 0.0f;
  if (threadIdx.x == 0) {
    *block_loss = 0.0;
    *block_count = 0ull;
  }
  __syncthreads();

  const long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (row < data.rows) {
    const float* x = data.x + row * dims;
    const float y = data.y[row];
    float z = state.b;
    for (int j = 0; j < dims; ++j) z += state.w[j] * x[j];
    const float e = 1.0f / (1.0f + expf(-z)) - y;
    for (int j = 0; j < dims; ++j) atomicAdd(&block_grad[j], e * x[j]);
    atomicAdd(&block_grad[dims], e);
    const double zd = z;
    atomicAdd(block_loss, fmax(zd, 0.0) - (double)y * zd + log1p(exp(-fabs(zd))));
    atomicAdd(block_count, 1ull);
  }
  __syncthreads();

  for (int i = threadIdx.x; i < dims; i += blockDim.x) atomicAdd(&result.grad_w[i], block_grad[i]);
  if (threadIdx.x == 0) {
    atomicAdd(result.grad_b, block_grad[dims]);
    atomicAdd(result.loss, *block_loss);
    atomicAdd((unsigned long long*)result.count, *block_count);
  }
}
