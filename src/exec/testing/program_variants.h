// Program variants for tests: a program's build for one value of its
// `dims` param (program/testing/program_images.h has the programs).  Params
// that do not bind fail the calling test.
//
//   ProgramVariant three = testing::variant_with_dims(testing::column_sums_image(), 3);
#pragma once

#include <gtest/gtest.h>

#include "exec/program_variant.h"
#include "program/layout.h"

namespace lizard::testing {

inline ProgramVariant variant_with_dims(const ProgramImage& program, int dims) {
  auto params = bind_params(program.manifest, {{"dims", dims}});
  EXPECT_TRUE(params.ok()) << params.status().message();
  return variant_for_run(program, params.ok() ? *params : ParamValues{});
}

}  // namespace lizard::testing
