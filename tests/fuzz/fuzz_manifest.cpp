// libFuzzer target: the manifest parser.  The input is config.yaml text; when
// parse_manifest accepts it, lizard_program.h is generated from the result.
//
//   build-fuzz/tests/fuzz/fuzz_manifest -dict=tests/fuzz/manifest.dict CORPUS
//   tests/fuzz/corpus/manifest
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "program/codegen.h"
#include "program/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  lizard::Result<lizard::Manifest> m = lizard::parse_manifest(text, "config.yaml");
  if (!m.ok()) {
    if (m.status().message().empty()) {
      std::fprintf(stderr, "parse_manifest failed without a message\n");
      std::abort();
    }
    return 0;
  }
  const std::string header = lizard::generate_program_header(*m);
  if (header.empty()) {
    std::fprintf(stderr, "generate_program_header returned nothing for an accepted manifest\n");
    std::abort();
  }
  return 0;
}
