// BuildKey: the name under which the server keeps a build that workers share
// (buildstore/build_store.h).  The server computes it itself, from the
// program it holds under the hash a worker names, the specialised values
// and tier of the build, and the architecture and toolchain that the
// worker's hello reported, never from a key a worker names: a worker (or
// the user code it runs) can offer builds of a program only under that
// program's hash, and only for what its own hello said it builds with.
//
//   Result<std::string> key = build_key(program->manifest, program->hash, offer,
//                                       identity.toolchain);
//   if (key.ok()) store.put(*key, program->hash, payload, offer.sha256);
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "program/manifest.h"
#include "protocol/messages.h"

namespace lizard {

// What a worker's hello says about the builds it makes: its toolchain
// (VariantCompiler::toolchain) and its executors' architectures ("cpu" for
// CPU executors, else the GPU's "sm_XY").
struct BuildIdentity {
  std::string toolchain;
  std::vector<std::string> archs;
  // From a hello: empty `toolchain` when the worker shares no builds.
  static BuildIdentity of(const HelloMsg& hello);
  bool builds_for(const std::string& arch) const;
};

// The architecture a build for executor `e` is named by: its GPU's, or "cpu".
std::string build_arch_of(const ExecutorInfo& e);

// The key of build `ref` of the program (`manifest`, registered as `hash`)
// made with `toolchain`: a 64-digit digest.  kInvalidArgument when the tier
// is not one, or a value names no specialised param of the manifest or is
// not a number.
Result<std::string> build_key(const Manifest& manifest, const std::string& hash,
                              const BuildRef& ref, const std::string& toolchain);

}  // namespace lizard
