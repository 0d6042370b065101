#include "common/shared_library.h"

#include <dlfcn.h>

namespace lizard {

SharedLibrary::~SharedLibrary() {
  if (handle_) dlclose(handle_);
}

SharedLibrary& SharedLibrary::operator=(SharedLibrary&& o) noexcept {
  if (this != &o) {
    if (handle_) dlclose(handle_);
    handle_ = std::exchange(o.handle_, nullptr);
  }
  return *this;
}

Result<SharedLibrary> SharedLibrary::open(const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    return not_found("cannot load " + path + ": " + (e ? e : "unknown error"));
  }
  return SharedLibrary(h);
}

Result<SharedLibrary> SharedLibrary::open_first(const std::initializer_list<std::string>& names) {
  std::string errors;
  for (const auto& n : names) {
    auto lib = open(n);
    if (lib.ok()) return lib;
    errors += (errors.empty() ? "" : "; ") + lib.status().message();
  }
  return not_found(errors);
}

void* SharedLibrary::raw_symbol(const char* name) const {
  return handle_ ? dlsym(handle_, name) : nullptr;
}

}  // namespace lizard
