// NvrtcLibrary: NVRTC (libnvrtc) loaded at run time, as a table of function
// pointers.  It needs no GPU and no driver, so programs can be compiled for
// any architecture on a node without one (CI, the server).
//
//   Result<std::shared_ptr<const NvrtcLibrary>> nv = NvrtcLibrary::load("/usr/local/cuda");
//   int v = (*nv)->version();   // 13000 for NVRTC 13.0
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/shared_library.h"
#include "common/status.h"

namespace lizard::cuda {

using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;
constexpr nvrtcResult NVRTC_SUCCESS = 0;

class NvrtcLibrary {
 public:
  // The places tried, in order: under `cuda_path` (lib64, then
  // targets/x86_64-linux/lib), then the loader's search path; for each,
  // libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so.
  static std::vector<std::string> candidates(const std::string& cuda_path);
  // kUnavailable naming the places tried when none loads.
  static Result<std::shared_ptr<const NvrtcLibrary>> load(const std::string& cuda_path);
  static Result<std::shared_ptr<const NvrtcLibrary>> load_from(
      const std::vector<std::string>& names);

  int version() const { return version_; }  // 1000 * major + 10 * minor
  std::string version_string() const;       // "13.0"
  const std::string& path() const { return path_; }
  // The real architectures this NVRTC can emit code for (e.g. 75, 80, ..., 120).
  std::vector<int> supported_archs() const;

  const char* (*nvrtcGetErrorString)(nvrtcResult) = nullptr;
  nvrtcResult (*nvrtcVersion)(int*, int*) = nullptr;
  nvrtcResult (*nvrtcGetNumSupportedArchs)(int*) = nullptr;
  nvrtcResult (*nvrtcGetSupportedArchs)(int*) = nullptr;
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram*, const char*, const char*, int,
                                    const char* const*, const char* const*) = nullptr;
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram*) = nullptr;
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char*) = nullptr;

 private:
  Status bind();

  SharedLibrary lib_;
  std::string path_;
  int version_ = 0;
};

}  // namespace lizard::cuda
