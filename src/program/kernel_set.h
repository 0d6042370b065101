// Kernel sets: a program's CUDA source cut down to the kernels one build
// needs.  NVRTC compiles every `__global__` function of a unit, launched or
// not; a run that iterates needs only its iterate kernels, and only a run
// that generates its rows needs the generators.  The CUDA backend therefore
// builds a program as separate kernel sets (exec/program_variant.h), each
// from the same source with the other manifest kernels demoted from
// `__global__` to `__device__`: an unused device function is dropped by the
// compiler before NVVM and ptxas spend time on it, and the rewrite keeps
// every byte offset, so the compiler's line and column numbers still point
// at the user's file.  Kernels the manifest does not name are left alone.
//
//   std::string unit = demote_kernels(source, {"blobs"});
//   // "extern \"C\" __device__ void blobs(...)": compiled only if called
#pragma once

#include <set>
#include <string>

#include "program/manifest.h"

namespace lizard {

// `source` with the `__global__` of every function named in `names`
// replaced by `__device__` (same length).  Comments, string and character
// literals and preprocessor lines are left untouched.
std::string demote_kernels(const std::string& source, const std::set<std::string>& names);

// The names of the functions `source` declares `__global__` (outside
// comments, literals and preprocessor lines).
std::set<std::string> global_functions(const std::string& source);

// "kernel 'gradiant' named in iterate is not a __global__ function of
// kernel.cu (its kernels: gradient)" for the first kernel of `m`'s iterate
// and generate steps that `source` does not declare; "" when it declares
// them all.  For a build that failed, to say why in the manifest's terms.
std::string missing_kernel_note(const Manifest& m, const std::string& source);

}  // namespace lizard
