// Specialisation: the param values one build of a program bakes into its
// generated lizard_program.h as compile-time constants.  Only params marked
// `specialize: true` in the manifest take part; a specialised param without a
// value stays an ordinary runtime member.
//
//   Specialisation s = run_specialisation(manifest, params);   // a run's values
//   std::string header = generate_program_header(manifest, s);  // codegen.h
//   cache[hash + "/" + s.key()] = compile(header, ...);
#pragma once

#include <map>
#include <string>

#include "program/layout.h"
#include "program/manifest.h"

namespace lizard {

struct Specialisation {
  std::map<std::string, ParamValue> values;  // by param name
  bool empty() const { return values.empty(); }
  // "dims=32,k=16": identifies the build among those of one program; empty
  // when nothing is baked in.
  std::string key() const;
  // {"dims": 32, "k": 16}
  nlohmann::json to_json() const;
};

// The specialised params' values of a run (bound by bind_params).
Specialisation run_specialisation(const Manifest& m, const ParamValues& p);
// The specialised params that have a default, with it: what a program is
// built with when it is registered.
Specialisation default_specialisation(const Manifest& m);

// The name of the storage member that keeps a specialised param's bytes in
// global_params_t, so that the struct's layout does not change.
std::string specialised_storage_name(const std::string& param);

}  // namespace lizard
