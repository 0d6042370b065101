// Code generation from the manifest: the lizard_program.h header that kernels
// and host hooks include.  Pure function of the manifest and, for a build
// specialised to a run, the values it bakes in.
//
//   std::string header = generate_program_header(manifest);
//   std::string for_run = generate_program_header(manifest, run_specialisation(manifest, params));
#pragma once

#include <string>

#include "program/manifest.h"
#include "program/specialisation.h"

namespace lizard {

// The header text.  It compiles under NVRTC, nvcc, the host C++ compiler
// (CPU backend and host.cpp) and a C compiler, and asserts the struct layout
// that StructLayout computes.  Each param in `s` becomes, in C++, a
// `static constexpr` member of global_params_t with its value (`p.dims` is a
// constant expression), while a storage member under another name keeps the
// struct's layout; C sees an ordinary member.  Without `s` every param is an
// ordinary member.
std::string generate_program_header(const Manifest& m, const Specialisation& s = {});

}  // namespace lizard
