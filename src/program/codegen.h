// Code generation from the manifest: the lizard_program.h header that kernels
// and host hooks include.  Pure function of the manifest.
//
//   std::string header = generate_program_header(manifest);
#pragma once

#include <string>

#include "program/manifest.h"

namespace lizard {

// The header text.  It compiles under NVRTC, nvcc, the host C++ compiler
// (CPU backend and host.cpp) and a C compiler, and asserts the struct layout
// that StructLayout computes.
std::string generate_program_header(const Manifest& m);

}  // namespace lizard
