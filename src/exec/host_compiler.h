// HostCompiler: builds C++ sources into a shared library with the system
// compiler (host.cpp hooks on the server; kernels on the CPU backend), in a
// cache directory keyed by the content, so an unchanged build is not redone.
//
//   HostCompiler cc(cache_dir);
//   Result<std::string> so = cc.build_shared({{"lizard_program.h", h}, {"host.cpp", src}},
//                                            {"host.cpp"}, {"-O2"});
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace lizard {

class HostCompiler {
 public:
  // `cache_dir` is created when missing.  The compiler is $CXX, else c++.
  explicit HostCompiler(std::string cache_dir);

  // Writes `files` into a fresh directory, compiles `units` (names among
  // `files`) into one shared library and returns its path.  A failure is a
  // kCompileError whose message holds the compiler's output.  `cached`, when
  // given, says whether the library came from the cache directory.
  Result<std::string> build_shared(const std::map<std::string, std::string>& files,
                                   const std::vector<std::string>& units,
                                   const std::vector<std::string>& flags,
                                   bool* cached = nullptr) const;

  const std::string& compiler() const { return compiler_; }

 private:
  std::string cache_dir_;
  std::string compiler_;
};

}  // namespace lizard
