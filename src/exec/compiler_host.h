// CompilerHosts: the processes that run the host compiler for a process (a
// daemon, an executor process) that hands its compiles out, each a
// `lizard compiler-host ROOT` of its own in a sandbox (sandbox/sandbox.h)
// where the compiler reads only the system's files and what lies beneath
// ROOT, writes only beneath ROOT, and reaches no other process and no TCP
// port.  So a program's source cannot make its compile read a file of the
// daemons (an `asm(".incbin ...")` of a token file), and an executor
// process, whose own sandbox starts no process, still builds CPU kernels:
// its compiler hosts were started before it entered that sandbox.
//
// A compiler host runs only what a HostCompiler asks for
// (check_compiler_command): the host compiler ($CXX, else c++) with the
// flags HostCompiler and its callers use, files named relative to a build
// directory beneath ROOT.  User code in the process that holds the channel
// can send it commands too; it gets compiles and nothing else.
//
//   auto hosts = CompilerHosts::start({.root = cache_dir, .processes = 2});
//   HostCompiler::run_compiler_through(
//       [h = hosts->get()](auto& argv, auto& cwd, int ms) { return h->run(argv, cwd, ms); });
//
// Thread-safe: each command takes a free host (starting another up to
// `max_processes` where this process may start processes), and waits for
// one when every host is busy.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/subprocess.h"

namespace lizard {

class ChildProcess;

inline constexpr const char* kCompilerHostCommand = "compiler-host";

struct CompilerHostOptions {
  std::string root;       // every build directory lies beneath it
  int processes = 1;      // started at once
  int max_processes = 0;  // started as commands need them; 0: `processes`
  std::string program;    // the binary serving `compiler-host`; empty: this one
};

class CompilerHosts {
 public:
  ~CompilerHosts();
  CompilerHosts(const CompilerHosts&) = delete;
  CompilerHosts& operator=(const CompilerHosts&) = delete;

  static Result<std::unique_ptr<CompilerHosts>> start(CompilerHostOptions options);

  // run_command(argv, cwd, timeout_ms) in a compiler host.  A command the
  // host refuses fails with kPermissionDenied; a host that died or did not
  // answer within the deadline is replaced (where it can be) and the
  // command fails.
  Result<CommandOutput> run(const std::vector<std::string>& argv, const std::string& cwd,
                            int timeout_ms);

  // Narrows every host to `dir` (beneath the root): from now on they build
  // only beneath it, and they and their compiles read only the system, the
  // compiler, `dir` and `shared` (precompiled headers), for good.  An
  // executor process calls it once it serves one owner, before that owner's
  // code loads; narrowing again can only narrow further.  Waits for the
  // commands under way.  A host that fails to narrow is ended.
  Status narrow(const std::string& dir, const std::string& shared);

  // A HostCompiler::Runner that runs commands here; this object must
  // outlive its use.
  std::function<Result<CommandOutput>(const std::vector<std::string>&, const std::string&, int)>
  runner();

 private:
  struct Host;
  explicit CompilerHosts(CompilerHostOptions options);
  Result<std::unique_ptr<ChildProcess>> spawn() const;
  // A free host, started if none is free and one more may be; waits otherwise.
  Result<Host*> take();
  void give_back(Host* host);
  Result<CommandOutput> run_on(Host* host, const std::vector<std::string>& argv,
                               const std::string& cwd, int timeout_ms);

  CompilerHostOptions options_;
  std::mutex mu_;
  std::condition_variable freed_;
  std::vector<std::unique_ptr<Host>> hosts_;  // GUARDED_BY(mu_)
};

// Whether a compiler host runs `argv` in `cwd`: argv[0] is `compiler`; the
// rest are flags of HostCompiler's builds or file names relative to the
// build directory (no "..", not absolute, not an option); `cwd` lies beneath
// `root` (symbolic links resolved).  `compiler --version` runs anywhere.
Status check_compiler_command(const std::vector<std::string>& argv, const std::string& cwd,
                              const std::string& compiler, const std::string& root);

// `lizard compiler-host ROOT` (a helper the daemons and executor processes
// start; not for users): serves commands until its parent closes the
// channel.  nullopt when argv is not that command.
std::optional<int> compiler_host_command(int argc, char** argv);

}  // namespace lizard
