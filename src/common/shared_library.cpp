#include "common/shared_library.h"

#include <dlfcn.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

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

Result<SharedLibrary> SharedLibrary::open_within(const std::string& path, int timeout_ms) {
  struct Load {
    std::mutex mu;
    std::condition_variable done_cv;
    bool done = false;                                       // GUARDED_BY(mu)
    Result<SharedLibrary> library = internal_error("none");  // GUARDED_BY(mu)
  };
  auto load = std::make_shared<Load>();
  std::thread([load, path] {
    Result<SharedLibrary> library = open(path);
    std::lock_guard<std::mutex> l(load->mu);
    load->library = std::move(library);
    load->done = true;
    load->done_cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> l(load->mu);
  if (!load->done_cv.wait_for(l, std::chrono::milliseconds(timeout_ms), [&] { return load->done; }))
    return Status(Code::kCancelled, "loading " + path + " did not finish within " +
                                        std::to_string(timeout_ms) + " ms");
  return std::move(load->library);
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
