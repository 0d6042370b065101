#include "exec/program_variant.h"

#include "program/codegen.h"

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

std::string specialised_note(const ProgramVariant& variant) {
  if (variant.values.empty()) return "";
  return "\n(compiled with the specialised params " + variant.values.key() + ")";
}

}  // namespace lizard
