#include "exec/host_compiler.h"

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/sha256.h"
#include "common/subprocess.h"

namespace fs = std::filesystem;

namespace lizard {

HostCompiler::HostCompiler(std::string cache_dir) : cache_dir_(std::move(cache_dir)) {
  const char* cxx = std::getenv("CXX");
  compiler_ = (cxx && *cxx) ? cxx : "c++";
}

Result<std::string> HostCompiler::build_shared(const std::map<std::string, std::string>& files,
                                               const std::vector<std::string>& units,
                                               const std::vector<std::string>& flags,
                                               bool* cached) const {
  if (cached) *cached = false;
  Sha256 key;
  auto field = [&key](std::string_view tag, std::string_view value) {
    const std::string len = std::to_string(value.size());
    key.update(tag);
    key.update(len);
    key.update(":");
    key.update(value);
  };
  field("compiler", compiler_);
  for (const auto& f : flags) field("flag", f);
  for (const auto& u : units) field("unit", u);
  for (const auto& [name, text] : files) {
    field("file", name);
    field("text", text);
  }
  const std::string digest = key.hex_digest().substr(0, 32);
  const fs::path dir = fs::path(cache_dir_) / digest;
  const fs::path lib = dir / "lib.so";
  std::error_code ec;
  if (fs::exists(lib, ec)) {
    if (cached) *cached = true;
    return lib.string();
  }

  // Build in a private directory, then rename into place so that concurrent
  // builders never see a half-written library.
  fs::path tmp = fs::path(cache_dir_) / (digest + ".tmp." + std::to_string(::getpid()) + "." +
                                         std::to_string(reinterpret_cast<uintptr_t>(&files)));
  fs::create_directories(tmp, ec);
  if (ec) return internal_error("cannot create " + tmp.string() + ": " + ec.message());
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
    fs::remove_all(tmp, ec);
    return internal_error("the C++ compiler could not be started (" + r.status().message() +
                          "); install one or set CXX");
  }
  if (r->exit_code != 0) {
    fs::remove_all(tmp, ec);
    return compile_error(r->output.empty()
                             ? "compiler exited with code " + std::to_string(r->exit_code)
                             : r->output);
  }
  fs::rename(tmp, dir, ec);
  if (ec) {  // another builder won the race: use its result
    fs::remove_all(tmp, ec);
  }
  if (!fs::exists(lib, ec)) return internal_error("build produced no library at " + lib.string());
  return lib.string();
}

}  // namespace lizard
