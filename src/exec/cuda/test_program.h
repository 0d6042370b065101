// Builds a ProgramImage from manifest text and sources, for the CUDA
// backend's tests.
//
//   ProgramImage p = make_test_program(kYaml, {{"kernel.cu", kKernel}});
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "common/sha256.h"
#include "exec/executor.h"
#include "program/codegen.h"

namespace lizard::cuda {

inline ProgramImage make_test_program(const std::string& yaml,
                                      const std::map<std::string, std::string>& sources) {
  ProgramImage p;
  auto m = parse_manifest(yaml, "config.yaml");
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return p;
  p.manifest = std::move(m).value();
  p.header = generate_program_header(p.manifest);
  p.sources = sources;
  Sha256 h;
  h.update(yaml);
  for (const auto& [name, text] : sources) {
    h.update(name);
    h.update(text);
  }
  p.hash = h.hex_digest();
  return p;
}

}  // namespace lizard::cuda
