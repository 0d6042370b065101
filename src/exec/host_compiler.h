// HostCompiler: builds C++ sources into a shared library with the system
// compiler (host.cpp hooks on the server; kernels on the CPU backend), kept
// in a CompileCache (exec/compile_cache.h) keyed by the compiler, its version
// output, the machine, the flags and the sources, so that an unchanged build
// is not redone by any process of the host.
//
//   HostCompiler cc(cache_dir);
//   Result<std::string> so = cc.build_shared({{"lizard_program.h", h}, {"host.cpp", src}},
//                                            {"host.cpp"}, {"-O2"});
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "exec/compile_cache.h"

namespace lizard {

class HostCompiler {
 public:
  // `cache_dir` is created when missing and kept within `max_cache_bytes`.
  // The compiler is $CXX, else c++.
  explicit HostCompiler(std::string cache_dir,
                        uint64_t max_cache_bytes = CompileCache::kDefaultMaxBytes);

  // Writes `files` into a fresh directory, compiles `units` (names among
  // `files`) into one shared library and returns its path.  A failure is a
  // kCompileError whose message holds the compiler's output.  `cached`, when
  // given, says whether the library came from the cache directory.
  Result<std::string> build_shared(const std::map<std::string, std::string>& files,
                                   const std::vector<std::string>& units,
                                   const std::vector<std::string>& flags,
                                   bool* cached = nullptr) const;

  // Whether build_shared() of these would find the library in the cache.
  bool cached(const std::map<std::string, std::string>& files,
              const std::vector<std::string>& units, const std::vector<std::string>& flags) const;

  const std::string& compiler() const { return compiler_; }

 private:
  // The cache entry's name for a build of these.
  std::string key_of(const std::map<std::string, std::string>& files,
                     const std::vector<std::string>& units,
                     const std::vector<std::string>& flags) const;
  // Compiles in a fresh directory under the cache's and returns the library.
  Result<std::string> compile(const std::map<std::string, std::string>& files,
                              const std::vector<std::string>& units,
                              const std::vector<std::string>& flags, const std::string& key) const;

  CompileCache cache_;
  std::string compiler_;
};

}  // namespace lizard
