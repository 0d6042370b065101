// SharedLibrary: an RAII handle over dlopen/dlsym.
//
//   Result<SharedLibrary> lib = SharedLibrary::open("/path/libx.so");
//   auto* fn = lib->symbol<int (*)(int)>("name");  // nullptr when absent
#pragma once

#include <string>
#include <utility>

#include "common/status.h"

namespace lizard {

class SharedLibrary {
 public:
  SharedLibrary() = default;
  ~SharedLibrary();
  SharedLibrary(SharedLibrary&& o) noexcept : handle_(std::exchange(o.handle_, nullptr)) {}
  SharedLibrary& operator=(SharedLibrary&& o) noexcept;
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  // RTLD_NOW | RTLD_LOCAL; the error carries dlerror().
  static Result<SharedLibrary> open(const std::string& path);
  // As open(), for a library whose initialisers are user code: the load runs
  // on a thread of its own and is waited for up to `timeout_ms`.  Past that
  // it fails (kCancelled) and its thread is left inside the dynamic loader,
  // holding its lock for ever: the process must end and load nothing more.
  static Result<SharedLibrary> open_within(const std::string& path, int timeout_ms);
  // Tries each name in turn (e.g. "libcuda.so.1", "libcuda.so").
  static Result<SharedLibrary> open_first(const std::initializer_list<std::string>& names);

  void* raw_symbol(const char* name) const;
  template <typename Fn>
  Fn symbol(const char* name) const {
    return reinterpret_cast<Fn>(raw_symbol(name));
  }
  bool is_open() const { return handle_ != nullptr; }

 private:
  explicit SharedLibrary(void* h) : handle_(h) {}
  void* handle_ = nullptr;
};

}  // namespace lizard
