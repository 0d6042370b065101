// ProgramVariant: a program as one build compiles it: the image with its
// lizard_program.h specialised to a set of param values (see
// program/specialisation.h), and the key executors cache that build under.
// A program without specialised params has one variant, keyed by its hash.
// The CUDA backend builds each variant as kernel sets (program/kernel_set.h):
// the iterate kernels, which every run launches, apart from the generators,
// which only a run that generates its rows needs.
//
//   ProgramVariant v = variant_for_run(program, params);
//   if (!cache.count(v.key)) cache[v.key] = compile(v.image);
//   ProgramVariant iterate = kernel_set(v, KernelSet::kIterate);  // for NVRTC
#pragma once

#include <string>

#include "exec/executor.h"
#include "program/specialisation.h"

namespace lizard {

// The tiers a GPU build comes in (measured in docs/benchmarks-history.md,
// first_tier).  kOptimised: full optimisation, which every run settles on.
// The first tiers, for a run to begin on while its optimised build
// compiles: kFast (NVRTC's fast-compile level and ptxas at -O1: 40% of the
// optimised compile, kernels up to 30x slower where they keep per-thread
// arrays) and kQuick (ptxas at -O1 alone: kernels within 3% of the
// optimised ones, but since the device library's folds compile once per
// field its compile is no shorter, so none is made any more; one already
// in a host's cache or the server's is still used).  All keep fp32
// semantics (no fast math), so their answers agree to rounding.  The CPU
// backend builds kOptimised only.
enum class BuildTier { kOptimised, kQuick, kFast };

// Partitions up to this many bytes begin on kFast: what its slower kernels
// cost them until the optimised build is in stays under what waiting for
// the optimised compile would.  Larger ones wait for the optimised build.
inline constexpr uint64_t kFastBuildMaxBytes = uint64_t{256} << 20;

// The build a run begins on when its optimised build is not ready: kQuick
// when one is ready (loaded or cached), else kFast for a partition of up to
// kFastBuildMaxBytes, else kOptimised (the run waits for its compile).
BuildTier first_tier_for(uint64_t partition_bytes, bool quick_ready);
// "optimised", "quick" or "fast".
const char* tier_name(BuildTier tier);

// Which of the manifest's kernels a build holds.
enum class KernelSet { kAll, kIterate, kGenerate };

struct ProgramVariant {
  ProgramImage image;     // header generated with `values` baked in
  Specialisation values;  // empty: the registered header
  std::string key;        // image.hash, then "/" and values.key() when any,
                          // then "#iterate" or "#generate" for a kernel set
  KernelSet kernels = KernelSet::kAll;
};

// The build registration makes: specialised params with a default take it.
ProgramVariant variant_for_build(const ProgramImage& program);
// The build a run needs: specialised params take the run's values.
ProgramVariant variant_for_run(const ProgramImage& program, const ParamValues& params);

// `variant` with only the manifest kernels of `set` left `__global__` in its
// CUDA source (the rest demoted to device functions), keyed apart.
ProgramVariant kernel_set(const ProgramVariant& variant, KernelSet set);
// Whether a build of `set` holds the iterate kernels, and the generators.
inline bool has_iterate_kernels(KernelSet set) {
  return set != KernelSet::kGenerate;
}
inline bool has_generators(KernelSet set) {
  return set != KernelSet::kIterate;
}

// "\n(compiled with the specialised params dims=32)", to end a compile error
// of `variant`; empty when nothing was specialised.
std::string specialised_note(const ProgramVariant& variant);

}  // namespace lizard
