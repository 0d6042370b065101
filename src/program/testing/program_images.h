// Program images for tests: a config.yaml and a kernel.cu (an empty one for
// tests that never compile it) made into the ProgramImage that the server,
// workers and executors take, as load_program's bundle would be.  A config
// that does not make an image fails the calling test and gives an empty image.
//
//   ProgramImage p = testing::program_image(kYaml, kKernel);
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

}  // namespace lizard::testing
