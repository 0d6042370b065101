#include "exec/host_compiler.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

#include "common/subprocess.h"

namespace fs = std::filesystem;

namespace lizard {
namespace {

// The file `compiler` runs (searched in $PATH unless it names a path), with
// its size and mtime: an upgrade that replaces it changes this.
std::string compiler_file(const std::string& compiler) {
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
    if (ec || !fs::is_regular_file(real, ec)) continue;
    const auto size = fs::file_size(real, ec);
    const auto mtime = fs::last_write_time(real, ec).time_since_epoch().count();
    return real.string() + " " + std::to_string(size) + " " + std::to_string(mtime);
  }
  return compiler;
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
  auto r = run_command({compiler, "--version"});
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

}  // namespace

HostCompiler::HostCompiler(std::string cache_dir, uint64_t max_cache_bytes)
    : cache_(std::move(cache_dir), max_cache_bytes) {
  const char* cxx = std::getenv("CXX");
  compiler_ = (cxx && *cxx) ? cxx : "c++";
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

bool HostCompiler::cached(const std::map<std::string, std::string>& files,
                          const std::vector<std::string>& units,
                          const std::vector<std::string>& flags) const {
  return cache_.contains(key_of(files, units, flags), ".so");
}

Result<std::string> HostCompiler::build_shared(const std::map<std::string, std::string>& files,
                                               const std::vector<std::string>& units,
                                               const std::vector<std::string>& flags,
                                               bool* cached) const {
  if (cached) *cached = false;
  if (cache_.dir().empty()) return invalid_argument("HostCompiler needs a cache directory");
  const std::string digest = key_of(files, units, flags);
  LIZARD_ASSIGN_OR_RETURN(CacheEntry entry, cache_.get_or_compile(digest, ".so", [&] {
    return compile(files, units, flags, digest);
  }));
  if (cached) *cached = entry.hit;
  return entry.path;
}

Result<std::string> HostCompiler::compile(const std::map<std::string, std::string>& files,
                                          const std::vector<std::string>& units,
                                          const std::vector<std::string>& flags,
                                          const std::string& key) const {
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
  for (const auto& [name, text] : files) {
    fs::path p = tmp / name;
    fs::create_directories(p.parent_path(), ec);
    std::ofstream out(p, std::ios::binary);
    out << text;
    if (!out) return internal_error("cannot write " + p.string());
  }
  std::vector<std::string> argv{compiler_, "-shared", "-fPIC", "-std=c++17", "-I."};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), units.begin(), units.end());
  argv.insert(argv.end(), {"-o", "lib.so"});
  auto r = run_command(argv, tmp.string());
  if (!r.ok()) {
    return internal_error("the C++ compiler could not be started (" + r.status().message() +
                          "); install one or set CXX");
  }
  if (r->exit_code != 0) {
    return compile_error(r->output.empty()
                             ? "compiler exited with code " + std::to_string(r->exit_code)
                             : r->output);
  }
  std::ifstream in(tmp / "lib.so", std::ios::binary);
  if (!in) return internal_error("build produced no library in " + tmp.string());
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return std::move(bytes).str();
}

}  // namespace lizard
