#include "backends.h"

#include <cstdlib>
#include <filesystem>
#include <string>

#include "exec/cpu/cpu_executor.h"
#include "exec/cuda/cuda_executor.h"

namespace lizard {
namespace {

std::string cache_dir(const std::string& backend) {
  return (std::filesystem::temp_directory_path() / ("lizard-conformance-" + backend)).string();
}

std::vector<std::unique_ptr<Executor>> cpu_executors() {
  CpuExecutorOptions o;
  o.cache_dir = cache_dir("cpu");
  std::vector<std::unique_ptr<Executor>> out;
  out.push_back(make_cpu_executor(o));
  return out;
}

Result<std::vector<std::unique_ptr<Executor>>> cuda_executors() {
  CudaOptions o;
  o.cache_dir = cache_dir("cuda");
  return make_cuda_executors(o);
}

}  // namespace

std::vector<std::unique_ptr<Executor>> conformance_executors(std::string* error) {
  const char* env = std::getenv("LIZARD_CONFORMANCE_BACKEND");
  const std::string backend = env && *env ? env : "cpu";
  Result<std::vector<std::unique_ptr<Executor>>> r =
      backend == "cpu" ? Result<std::vector<std::unique_ptr<Executor>>>(cpu_executors())
      : backend == "cuda"
          ? cuda_executors()
          : invalid_argument("LIZARD_CONFORMANCE_BACKEND must be cpu or cuda, not '" + backend +
                             "'");
  if (!r.ok()) {
    if (error) *error = backend + " backend: " + r.status().message();
    return {};
  }
  return std::move(r).value();
}

}  // namespace lizard
