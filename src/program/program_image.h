// ProgramImage: a registered program as workers and executors see it: its
// checksum, its manifest (and the config.yaml text it was parsed from), the
// generated lizard_program.h and its kernel sources.  Made from a bundle by
// make_program_image() (bundle.h); executors build it (exec/executor.h).
//
//   ProgramImage img = make_program_image(bundle).value();
//   img.sources.at(img.manifest.cuda_source);   // kernel.cu
#pragma once

#include <map>
#include <string>

#include "program/manifest.h"

namespace lizard {

// A registered program as executors see it.
struct ProgramImage {
  std::string hash;
  std::string config;  // config.yaml text, from which `manifest` was parsed
  Manifest manifest;
  std::string header;                          // generated lizard_program.h
  std::map<std::string, std::string> sources;  // kernel.cu and headers, by name
};

}  // namespace lizard
