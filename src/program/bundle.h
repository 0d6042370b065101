// ProgramBundle: a user program as it travels (load_program → server →
// workers): config.yaml and the source files it lists, plus its checksum.
//
//   Result<ProgramBundle> b = read_program_dir("examples/kmeans");
//   std::string hash = bundle_checksum(*b);          // SHA-256 hex
//   Result<ProgramImage> img = make_program_image(*b);  // validated, header generated
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>

#include "common/status.h"
#include "program/program_image.h"

namespace lizard {

struct ProgramBundle {
  std::string config;                          // config.yaml text
  std::map<std::string, std::string> sources;  // file name → text

  nlohmann::json to_json() const;  // {"config": ..., "sources": {...}}
  static Result<ProgramBundle> from_json(const nlohmann::json& j);
};

// SHA-256 over a canonical encoding (file names sorted, lengths prefixed), so
// the same program gives the same checksum wherever it is bundled.
std::string bundle_checksum(const ProgramBundle& b);

// Reads config.yaml from `dir` and every source file it lists.
Result<ProgramBundle> read_program_dir(const std::string& dir);

// Validates the manifest, checks that every listed source is present and no
// other is and that the sources include no file but the program's and the
// system's (program/include_check.h), generates lizard_program.h and computes the checksum.
Result<ProgramImage> make_program_image(const ProgramBundle& b);

}  // namespace lizard
