#include "exec/program_variant.h"

#include <set>

#include "program/codegen.h"
#include "program/kernel_set.h"

namespace lizard {
namespace {

ProgramVariant make_variant(const ProgramImage& program, Specialisation values) {
  ProgramVariant v;
  v.image = program;
  v.key = program.hash;
  if (!values.empty()) {
    v.image.header = generate_program_header(program.manifest, values);
    v.key += "/" + values.key();
  }
  v.values = std::move(values);
  return v;
}

}  // namespace

ProgramVariant variant_for_build(const ProgramImage& program) {
  return make_variant(program, default_specialisation(program.manifest));
}

ProgramVariant variant_for_run(const ProgramImage& program, const ParamValues& params) {
  return make_variant(program, run_specialisation(program.manifest, params));
}

ProgramVariant kernel_set(const ProgramVariant& variant, KernelSet set) {
  if (set == KernelSet::kAll || variant.kernels != KernelSet::kAll) return variant;
  const Manifest& m = variant.image.manifest;
  std::set<std::string> keep, demote;
  for (const auto& step : m.iterate)
    if (has_iterate_kernels(set)) keep.insert(step.kernel);
  for (const auto& step : m.generate)
    if (has_generators(set)) keep.insert(step.kernel);
  for (const auto& step : m.iterate)
    if (!keep.count(step.kernel)) demote.insert(step.kernel);
  for (const auto& step : m.generate)
    if (!keep.count(step.kernel)) demote.insert(step.kernel);
  ProgramVariant v = variant;
  v.kernels = set;
  v.key += set == KernelSet::kIterate ? "#iterate" : "#generate";
  auto unit = v.image.sources.find(m.cuda_source);
  if (unit != v.image.sources.end()) unit->second = demote_kernels(unit->second, demote);
  return v;
}

BuildTier first_tier_for(uint64_t partition_bytes, bool quick_ready) {
  if (quick_ready) return BuildTier::kQuick;
  return partition_bytes <= kFastBuildMaxBytes ? BuildTier::kFast : BuildTier::kOptimised;
}

const char* tier_name(BuildTier tier) {
  switch (tier) {
    case BuildTier::kOptimised:
      return "optimised";
    case BuildTier::kQuick:
      return "quick";
    case BuildTier::kFast:
      return "fast";
  }
  return "?";
}

std::string specialised_note(const ProgramVariant& variant) {
  if (variant.values.empty()) return "";
  return "\n(compiled with the specialised params " + variant.values.key() + ")";
}

}  // namespace lizard
