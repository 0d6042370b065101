// Program images for tests: a config.yaml and a kernel.cu (an empty one for
// tests that never compile it) made into the ProgramImage that the server,
// workers and executors take, as load_program's bundle would be.  A config
// that does not make an image fails the calling test and gives an empty image.
//
//   ProgramImage p = testing::program_image(kYaml, kKernel);
//   ProgramImage q = testing::column_sums_image();  // `dims` specialised
//   ProgramImage r = testing::row_sum_image("b");   // sums x; "b": another checksum
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "program/bundle.h"

namespace lizard::testing {

inline ProgramImage program_image(const std::string& config, const std::string& kernel = "") {
  ProgramBundle b;
  b.config = config;
  b.sources["kernel.cu"] = kernel;
  auto img = make_program_image(b);
  EXPECT_TRUE(img.ok()) << img.status().message();
  return img.ok() ? img.value() : ProgramImage{};
}

// A program whose kernel sums each of its `dims` columns, `dims` specialised:
// each value of it is a build of its own, which both backends compile.
inline ProgramImage column_sums_image() {
  return program_image(
      "sources: {cuda: kernel.cu}\n"
      "params: {dims: {type: int32, specialize: true, default: 2}}\n"
      "dataset: {x: {type: float32, shape: [rows, dims]}}\n"
      "aggregate: {sums: {type: float32, shape: [dims], reduce: sum}}\n"
      "iterate: [column_sums]\n",
      R"(#include "lizard_program.h"
extern "C" __global__ void column_sums(global_params_t p, dataset_t d, global_state_t s,
                                       agg_res_t r) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= d.rows) return;
  for (int j = 0; j < p.dims; ++j) atomicAdd(&r.sums[j], d.x[i * p.dims + j]);
}
)");
}

// A program that sums its float32 rows `x` into `total` (float64); `tag`,
// when given, goes into a comment of its config, which makes it another
// program (another checksum) of the same kernels.
inline ProgramImage row_sum_image(const std::string& tag = "") {
  return program_image(
      "sources: {cuda: kernel.cu}\n"
      "dataset: {x: {type: float32, shape: [rows]}}\n"
      "aggregate: {total: {type: float64, reduce: sum}}\n"
      "iterate: [{kernel: add, block: 64}]\n" +
          (tag.empty() ? "" : "# " + tag + "\n"),
      R"(extern "C" __global__ void add(global_params_t params, dataset_t data, global_state_t state,
                               agg_res_t result) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= data.rows) return;
  atomicAdd(result.total, (double)data.x[i]);
}
)");
}

}  // namespace lizard::testing
