// ProgramVariant: a program as one build compiles it: the image with its
// lizard_program.h specialised to a set of param values (see
// program/specialisation.h), and the key executors cache that build under.
// A program without specialised params has one variant, keyed by its hash.
//
//   ProgramVariant v = variant_for_run(program, params);
//   if (!cache.count(v.key)) cache[v.key] = compile(v.image);
#pragma once

#include <string>

#include "exec/executor.h"
#include "program/specialisation.h"

namespace lizard {

// The tiers a GPU build comes in.  kOptimised: full optimisation, which
// every run settles on.  kQuick: NVRTC's fast-compile level, about a
// quarter of the compile time for kernels that run slower, for a run to
// begin on while its optimised build compiles.  Both keep fp32 semantics
// (no fast math), so their answers agree to rounding.  The CPU backend
// builds kOptimised only.
enum class BuildTier { kOptimised, kQuick };

struct ProgramVariant {
  ProgramImage image;     // header generated with `values` baked in
  Specialisation values;  // empty: the registered header
  std::string key;        // image.hash, then "/" and values.key() when any
};

// The build registration makes: specialised params with a default take it.
ProgramVariant variant_for_build(const ProgramImage& program);
// The build a run needs: specialised params take the run's values.
ProgramVariant variant_for_run(const ProgramImage& program, const ParamValues& params);

// "\n(compiled with the specialised params dims=32)", to end a compile error
// of `variant`; empty when nothing was specialised.
std::string specialised_note(const ProgramVariant& variant);

}  // namespace lizard
