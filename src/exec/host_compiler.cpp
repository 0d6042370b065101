#include "exec/host_compiler.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

#include "common/regular_file.h"
#include "common/subprocess.h"

namespace fs = std::filesystem;

namespace lizard {
namespace {

// `compiler --version` answers at once; one that does not is not waited for.
constexpr int kVersionTimeoutMs = 10000;

HostCompiler::Runner& compiler_runner() {
  static HostCompiler::Runner runner;
  return runner;
}

// One run of the compiler, wherever this process runs them.
Result<CommandOutput> run_compiler(const std::vector<std::string>& argv, const std::string& cwd,
                                   int timeout_ms) {
  const HostCompiler::Runner& runner = compiler_runner();
  return runner ? runner(argv, cwd, timeout_ms) : run_command(argv, cwd, timeout_ms);
}

// The file `compiler` runs (HostCompiler::compiler_path), with its size and
// mtime: an upgrade that replaces it changes this.
std::string compiler_file(const std::string& compiler) {
  const std::string real = HostCompiler::compiler_path(compiler);
  if (real.empty()) return compiler;
  std::error_code ec;
  const auto size = fs::file_size(real, ec);
  const auto mtime = fs::last_write_time(real, ec).time_since_epoch().count();
  return real + " " + std::to_string(size) + " " + std::to_string(mtime);
}

// What `compiler --version` prints, asked again only when the compiler's file
// changes: a new compiler release misses the cache.
std::string compiler_version(const std::string& compiler) {
  static std::mutex mu;
  static std::map<std::string, std::string> known;  // by compiler_file()
  const std::string file = compiler_file(compiler);
  std::lock_guard<std::mutex> lock(mu);
  auto it = known.find(file);
  if (it != known.end()) return it->second;
  auto r = run_compiler({compiler, "--version"}, "", kVersionTimeoutMs);
  std::string version = r.ok() && r->exit_code == 0 ? r->output : "";
  known[file] = version;
  return version;
}

// The machine and CPU model: -march=native builds for this one.
std::string machine() {
  struct utsname u {};
  std::string out = ::uname(&u) == 0 ? u.machine : "";
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return out + " " + line;
  return out;
}

// A build that ran out of room where it writes: kStorageFull (507 on the
// server), so that the answer says what to free rather than blaming the code.
Status disk_full(const std::string& where) {
  return storage_full("the disk is full: the build could not write " + where +
                      " (free space there and try again)");
}

// Writes `files` (name -> text) into `dir`, subdirectories included.
Status write_files(const fs::path& dir, const std::map<std::string, std::string>& files) {
  std::error_code ec;
  for (const auto& [name, text] : files) {
    const fs::path p = dir / name;
    fs::create_directories(p.parent_path(), ec);
    errno = 0;
    std::ofstream out(p, std::ios::binary);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out) {
      if (errno == ENOSPC || errno == EDQUOT || ec.value() == ENOSPC) return disk_full(p.string());
      return internal_error("cannot write " + p.string());
    }
  }
  return Status::Ok();
}

// Where `pch` precompiled by `compiler` for `flags` lies under `cache_dir`:
// keyed by the compiler, the machine, the flags and every file it reads.
std::string pch_path(const std::string& compiler, const std::string& cache_dir,
                     const std::map<std::string, std::string>& files,
                     const std::vector<std::string>& flags, const PrecompiledHeader& pch) {
  CompileKey key;
  key.add("format", "lizard-pch-1").add("compiler", compiler);
  key.add("version", compiler_version(compiler)).add("machine", machine());
  for (const auto& f : flags) key.add("flag", f);
  key.add("header", pch.header);
  for (const std::string& name : pch.inputs) {
    auto it = files.find(name);
    if (it == files.end()) return "";
    key.add("file", name).add("text", it->second);
  }
  return (fs::path(cache_dir) / "pch" / (key.digest() + ".gch")).string();
}

// Makes it unless it is there: in a directory of its own, renamed into place
// whole (two processes that make it at once both do, and either one's stays).
bool make_pch(const std::string& compiler, const std::string& cache_dir, int timeout_s,
              const std::map<std::string, std::string>& files,
              const std::vector<std::string>& flags, const PrecompiledHeader& pch) {
  const fs::path path = pch_path(compiler, cache_dir, files, flags, pch);
  std::error_code ec;
  if (path.empty()) return false;
  if (regular_file_exists(path.string())) return true;
  fs::remove(path, ec);  // not a file: made again in its place
  static std::atomic<unsigned> counter{0};
  // Built beside the library builds, whose leftovers the cache clears when
  // a process dies mid-build (CompileCache), then moved into pch/.
  const fs::path tmp =
      fs::path(cache_dir) / (path.stem().string() + ".pch.build." + std::to_string(::getpid()) +
                             "." + std::to_string(counter++));
  fs::create_directories(path.parent_path(), ec);
  std::map<std::string, std::string> inputs;
  for (const std::string& name : pch.inputs) inputs[name] = files.at(name);
  fs::create_directories(tmp, ec);
  if (ec || !write_files(tmp, inputs).ok()) {
    fs::remove_all(tmp, ec);
    return false;
  }
  std::vector<std::string> argv{compiler, "-fPIC", "-std=c++17", "-I."};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-x", "c++-header", pch.header, "-o", pch.header + ".gch"});
  auto r = run_compiler(argv, tmp.string(), timeout_s * 1000);
  if (r.ok() && !r->timed_out && r->exit_code == 0)
    fs::rename(tmp / (pch.header + ".gch"), path, ec);
  fs::remove_all(tmp, ec);
  return regular_file_exists(path.string());
}

}  // namespace

void HostCompiler::run_compiler_through(Runner runner) {
  compiler_runner() = std::move(runner);
}

std::string HostCompiler::compiler_path(const std::string& compiler) {
  std::vector<std::string> candidates;
  if (compiler.find('/') != std::string::npos) {
    candidates.push_back(compiler);
  } else if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');)
      candidates.push_back((dir.empty() ? "." : dir) + "/" + compiler);
  }
  for (const std::string& c : candidates) {
    std::error_code ec;
    const fs::path real = fs::canonical(c, ec);
    if (!ec && fs::is_regular_file(real, ec)) return real.string();
  }
  return "";
}

std::string HostCompiler::default_compiler() {
  const char* cxx = std::getenv("CXX");
  return (cxx && *cxx) ? cxx : "c++";
}

HostCompiler::HostCompiler(std::string cache_dir, uint64_t max_cache_bytes, int compile_timeout_s)
    : cache_(std::move(cache_dir), max_cache_bytes),
      compiler_(default_compiler()),
      compile_timeout_s_(compile_timeout_s) {}

HostCompiler HostCompiler::for_owner(const std::string& owner) const {
  HostCompiler owned(*this);
  owned.cache_ = cache_.owned_by(owner);
  return owned;
}

std::string HostCompiler::key_of(const std::map<std::string, std::string>& files,
                                 const std::vector<std::string>& units,
                                 const std::vector<std::string>& flags) const {
  CompileKey key;
  key.add("format", "lizard-host-2").add("compiler", compiler_);
  key.add("version", compiler_version(compiler_)).add("machine", machine());
  for (const auto& f : flags) key.add("flag", f);
  for (const auto& u : units) key.add("unit", u);
  for (const auto& [name, text] : files) key.add("file", name).add("text", text);
  return key.digest();
}

std::string HostCompiler::toolchain() const {
  CompileKey key;
  key.add("format", "lizard-host-2").add("compiler", compiler_);
  key.add("version", compiler_version(compiler_)).add("machine", machine());
  return key.digest();
}

bool HostCompiler::cached(const std::map<std::string, std::string>& files,
                          const std::vector<std::string>& units,
                          const std::vector<std::string>& flags) const {
  return contains(key_of(files, units, flags));
}

bool HostCompiler::contains(const std::string& key) const {
  return cache_.contains(key, ".so");
}

Result<std::string> HostCompiler::build_shared(const std::map<std::string, std::string>& files,
                                               const std::vector<std::string>& units,
                                               const std::vector<std::string>& flags, bool* cached,
                                               const PrecompiledHeader* pch) const {
  if (cached) *cached = false;
  if (cache_.dir().empty()) return invalid_argument("HostCompiler needs a cache directory");
  const std::string digest = key_of(files, units, flags);
  LIZARD_ASSIGN_OR_RETURN(CacheEntry entry, cache_.get_or_compile(digest, ".so", [&] {
    return compile(files, units, flags, digest, pch);
  }));
  if (cached) *cached = entry.hit;
  return entry.path;
}

std::string HostCompiler::precompiled_path(const std::map<std::string, std::string>& files,
                                           const std::vector<std::string>& flags,
                                           const PrecompiledHeader& pch) const {
  return pch_path(compiler_, cache_.root(), files, flags, pch);
}

bool HostCompiler::make_precompiled(const std::map<std::string, std::string>& files,
                                    const std::vector<std::string>& flags,
                                    const PrecompiledHeader& pch) const {
  return make_pch(compiler_, cache_.root(), compile_timeout_s_, files, flags, pch);
}

std::string HostCompiler::precompiled(const std::map<std::string, std::string>& files,
                                      const std::vector<std::string>& flags,
                                      const PrecompiledHeader& pch) const {
  const std::string path = precompiled_path(files, flags, pch);
  if (path.empty() || regular_file_exists(path)) return path;
  std::lock_guard<std::mutex> l(background_->mu);
  if (++background_->builds_without < 2 || background_->making.valid()) return "";
  std::map<std::string, std::string> inputs;  // all make_pch reads of `files`
  for (const std::string& name : pch.inputs) inputs[name] = files.at(name);
  background_->making =
      std::async(std::launch::async,
                 [compiler = compiler_, dir = cache_.root(), timeout = compile_timeout_s_, inputs,
                  flags, pch] { return make_pch(compiler, dir, timeout, inputs, flags, pch); });
  return "";
}

Result<std::string> HostCompiler::compile(const std::map<std::string, std::string>& files,
                                          const std::vector<std::string>& units,
                                          const std::vector<std::string>& flags,
                                          const std::string& key,
                                          const PrecompiledHeader* pch) const {
  static std::atomic<unsigned> counter{0};
  const fs::path tmp = fs::path(cache_.dir()) / (key + ".build." + std::to_string(::getpid()) +
                                                 "." + std::to_string(counter++));
  std::error_code ec;
  fs::create_directories(tmp, ec);
  if (ec) return internal_error("cannot create " + tmp.string() + ": " + ec.message());
  struct RemoveAfter {
    fs::path dir;
    ~RemoveAfter() {
      std::error_code e;
      fs::remove_all(dir, e);
    }
  } remove_after{tmp};
  LIZARD_RETURN_IF_ERROR(write_files(tmp, files));
  if (pch) {  // beside its header, where the compiler looks for it
    const std::string gch = precompiled(files, flags, *pch);
    if (!gch.empty()) fs::create_symlink(gch, tmp / (pch->header + ".gch"), ec);
  }
  std::vector<std::string> argv{compiler_, "-shared", "-fPIC", "-std=c++17", "-I."};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), units.begin(), units.end());
  argv.insert(argv.end(), {"-o", "lib.so"});
  auto r = run_compiler(argv, tmp.string(), compile_timeout_s_ * 1000);
  if (!r.ok()) {
    return internal_error("the C++ compiler could not be started (" + r.status().message() +
                          "); install one or set CXX");
  }
  if (r->timed_out)
    return compile_error("compile timed out after " + std::to_string(compile_timeout_s_) + " s");
  if (r->exit_code != 0) {
    if (r->output.find("No space left on device") != std::string::npos)
      return disk_full(tmp.string());
    return compile_error(r->output.empty()
                             ? "compiler exited with code " + std::to_string(r->exit_code)
                             : r->output);
  }
  auto library = read_regular_file((tmp / "lib.so").string());
  if (!library.ok())
    return internal_error("build produced no library in " + tmp.string() + ": " +
                          library.status().message());
  return library;
}

}  // namespace lizard
