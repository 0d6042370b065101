#include "buildstore/build_key.h"

#include <algorithm>

#include "exec/compile_cache.h"

namespace lizard {

BuildIdentity BuildIdentity::of(const HelloMsg& hello) {
  BuildIdentity id;
  id.toolchain = hello.toolchain;
  for (const ExecutorInfo& e : hello.executors) {
    const std::string arch = build_arch_of(e);
    if (std::find(id.archs.begin(), id.archs.end(), arch) == id.archs.end())
      id.archs.push_back(arch);
  }
  return id;
}

bool BuildIdentity::builds_for(const std::string& arch) const {
  return !toolchain.empty() && std::find(archs.begin(), archs.end(), arch) != archs.end();
}

std::string build_arch_of(const ExecutorInfo& e) {
  return e.kind == "cpu" || e.arch.empty() ? std::string("cpu") : e.arch;
}

namespace {

bool is_tier(const std::string& t) {
  return t == "optimised" || t == "quick" || t == "fast";
}

const ParamSpec* param_named(const Manifest& m, const std::string& name) {
  for (const ParamSpec& p : m.params)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace

Result<std::string> build_key(const Manifest& manifest, const std::string& hash,
                              const BuildRef& ref, const std::string& toolchain) {
  if (!is_tier(ref.tier)) return invalid_argument("'" + ref.tier + "' is not a build tier");
  if (!ref.values.is_object()) return invalid_argument("the specialised values are not an object");
  for (const auto& [name, value] : ref.values.items()) {
    const ParamSpec* p = param_named(manifest, name);
    if (!p || !p->specialize)
      return invalid_argument("'" + name + "' is not a specialised param of " + manifest.name);
    if (!value.is_number() && !value.is_boolean())
      return invalid_argument("the value of '" + name + "' is not a number");
  }
  if (toolchain.empty()) return invalid_argument("no toolchain");
  CompileKey key;
  key.add("format", "lizard-build-store-1").add("program", hash);
  key.add("values", ref.values.dump());  // keys in order: one text per set of values
  key.add("tier", ref.tier).add("arch", ref.arch).add("toolchain", toolchain);
  return key.digest();
}

}  // namespace lizard
