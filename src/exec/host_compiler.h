// HostCompiler: builds C++ sources into a shared library with the system
// compiler (host.cpp hooks on the server; kernels on the CPU backend), kept
// in a CompileCache (exec/compile_cache.h) keyed by the compiler, its version
// output, the machine, the flags and the sources, so that an unchanged build
// is not redone by any process of the host.
//
//   HostCompiler cc(cache_dir);
//   Result<std::string> so = cc.build_shared({{"lizard_program.h", h}, {"host.cpp", src}},
//                                            {"host.cpp"}, {"-O2"});
//
// A build may name a header that every unit includes first and that many
// builds share (the CPU backend's runtime): it is precompiled once per host,
// compiler and flags (a GCC .gch in the cache's pch/, keyed by everything it
// reads), and the builds read it instead of parsing it.  It is made in the
// background once a process builds a second time without it, so that no
// build waits for it; a compiler that cannot use it parses the header.
//
// Every compiler run has a deadline (`compile_timeout_s`): a compiler still
// running then (an #include of a FIFO, a template that never ends) is killed
// with its process group and the build fails with "compile timed out after
// N s".  The files a build reads back (its library, the cache's entries) are
// opened as regular files only (common/regular_file.h).
//
// A process may route every run of the compiler elsewhere
// (HostCompiler::run_compiler_through): the daemons and executor processes
// hand them to compiler hosts (exec/compiler_host.h), sandboxed processes
// that may start the compiler where their caller may not.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/subprocess.h"
#include "exec/compile_cache.h"

namespace lizard {

// A header to precompile: `header`, a name among a build's files that each
// unit includes first, and `inputs`, the names of every file it reads
// (itself included), which key the precompiled header: its content must not
// depend on any other file of the build.
struct PrecompiledHeader {
  std::string header;
  std::vector<std::string> inputs;
};

class HostCompiler {
 public:
  static constexpr int kDefaultCompileTimeoutS = 120;

  // How a compiler command runs: run_command()'s arguments and answer.
  using Runner = std::function<Result<CommandOutput>(const std::vector<std::string>& argv,
                                                     const std::string& cwd, int timeout_ms)>;
  // Every HostCompiler of this process runs the compiler through `runner`
  // from now on (empty: run_command() again).  Set once, before the first
  // build and before threads that build start.
  static void run_compiler_through(Runner runner);
  // The compiler a HostCompiler runs: $CXX, else c++.
  static std::string default_compiler();
  // The file `compiler` runs, symbolic links resolved (searched in $PATH
  // unless it names a path); "" when there is none.
  static std::string compiler_path(const std::string& compiler);

  // `cache_dir` is created when missing and kept within `max_cache_bytes`.
  // The compiler is $CXX, else c++; each run of it may take at most
  // `compile_timeout_s` seconds.
  explicit HostCompiler(std::string cache_dir,
                        uint64_t max_cache_bytes = CompileCache::kDefaultMaxBytes,
                        int compile_timeout_s = kDefaultCompileTimeoutS);

  // This compiler, keeping its builds among `owner`'s entries of the cache
  // (CompileCache::owned_by) and building in directories beneath them.  The
  // precompiled headers stay shared, in the whole cache's pch/.
  HostCompiler for_owner(const std::string& owner) const;

  // Writes `files` into a fresh directory, compiles `units` (names among
  // `files`) into one shared library and returns its path.  A failure is a
  // kCompileError whose message holds the compiler's output.  `cached`, when
  // given, says whether the library came from the cache directory.  With
  // `pch`, that header is read precompiled.
  Result<std::string> build_shared(const std::map<std::string, std::string>& files,
                                   const std::vector<std::string>& units,
                                   const std::vector<std::string>& flags, bool* cached = nullptr,
                                   const PrecompiledHeader* pch = nullptr) const;

  // Whether build_shared() of these would find the library in the cache.
  bool cached(const std::map<std::string, std::string>& files,
              const std::vector<std::string>& units, const std::vector<std::string>& flags) const;
  // The cache entry's name for a build of these, and whether the cache holds
  // that entry (cached() is the two together).
  std::string key_of(const std::map<std::string, std::string>& files,
                     const std::vector<std::string>& units,
                     const std::vector<std::string>& flags) const;
  bool contains(const std::string& key) const;

  const std::string& compiler() const { return compiler_; }
  // The part of every build's key that is not the build's own: the
  // compiler, what its --version says, and the machine.
  std::string toolchain() const;
  int compile_timeout_s() const { return compile_timeout_s_; }

  // Where `pch` precompiled for `flags` lies once made (whether or not it
  // is there yet); "" when an input is missing from `files`.
  std::string precompiled_path(const std::map<std::string, std::string>& files,
                               const std::vector<std::string>& flags,
                               const PrecompiledHeader& pch) const;
  // Makes it now unless it is there; false when it cannot be made.
  bool make_precompiled(const std::map<std::string, std::string>& files,
                        const std::vector<std::string>& flags, const PrecompiledHeader& pch) const;

 private:
  // Compiles in a fresh directory under the cache's and returns the library.
  Result<std::string> compile(const std::map<std::string, std::string>& files,
                              const std::vector<std::string>& units,
                              const std::vector<std::string>& flags, const std::string& key,
                              const PrecompiledHeader* pch) const;
  // The path of `pch` precompiled for `flags` when it is there, else "" (and
  // at the process's second such build, made in the background).
  std::string precompiled(const std::map<std::string, std::string>& files,
                          const std::vector<std::string>& flags,
                          const PrecompiledHeader& pch) const;

  // The precompiled header made in the background (shared by copies of
  // this compiler; its destructor waits for the compile under way).
  struct Background {
    std::mutex mu;
    int builds_without = 0;    // GUARDED_BY(mu)
    std::future<bool> making;  // GUARDED_BY(mu)
  };

  CompileCache cache_;
  std::string compiler_;
  int compile_timeout_s_;
  std::shared_ptr<Background> background_ = std::make_shared<Background>();
};

}  // namespace lizard
