// Gradient of the log-loss of logistic regression, summed over the partition.
// For a row (x, y) with z = w.x + b and p = sigmoid(z), the row adds
// (p - y) x to grad_w, (p - y) to grad_b and
// log(1 + e^z) - y z = max(z, 0) - y z + log1p(e^-|z|) to loss.
#include "lizard_program.h"

extern "C" __global__ void gradient(global_params_t params, dataset_t data, global_state_t state,
                                    agg_res_t result) {
  const int dims = params.dims;
  lizard::BlockSum<&agg_res_t::grad_w, lizard::kRunTimeSize> grad_w(result, dims);
  lizard::BlockSum<&agg_res_t::grad_b> grad_b(result);
  lizard::BlockSum<&agg_res_t::loss> loss(result);
  lizard::BlockSum<&agg_res_t::count> count(result);
  for (const long long row : lizard::rows(data)) {
    const float* x = data.x + row * dims;
    const float y = data.y[row];
    float z = state.b;
    for (int j = 0; j < dims; ++j) z += state.w[j] * x[j];
    const float e = 1.0f / (1.0f + expf(-z)) - y;
    for (int j = 0; j < dims; ++j) grad_w.add(j, e * x[j]);
    grad_b.add(0, e);
    const double zd = z;
    loss.add(0, fmax(zd, 0.0) - (double)y * zd + log1p(exp(-fabs(zd))));
    count.add(0, 1);
  }
}
