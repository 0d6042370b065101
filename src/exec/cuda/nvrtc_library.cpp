#include "exec/cuda/nvrtc_library.h"

namespace lizard::cuda {

std::vector<std::string> NvrtcLibrary::candidates(const std::string& cuda_path) {
  const char* names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  std::vector<std::string> dirs;
  if (!cuda_path.empty()) {
    dirs.push_back(cuda_path + "/lib64/");
    dirs.push_back(cuda_path + "/targets/x86_64-linux/lib/");
  }
  dirs.push_back("");  // the dynamic loader's search path
  std::vector<std::string> out;
  for (const auto& d : dirs)
    for (const char* n : names) out.push_back(d + n);
  return out;
}

Result<std::shared_ptr<const NvrtcLibrary>> NvrtcLibrary::load(const std::string& cuda_path) {
  return load_from(candidates(cuda_path));
}

Result<std::shared_ptr<const NvrtcLibrary>> NvrtcLibrary::load_from(
    const std::vector<std::string>& names) {
  auto nv = std::make_shared<NvrtcLibrary>();
  for (const auto& n : names) {
    auto lib = SharedLibrary::open(n);
    if (!lib.ok()) continue;
    nv->lib_ = std::move(lib).value();
    nv->path_ = n;
    break;
  }
  if (!nv->lib_.is_open()) {
    std::string tried;
    for (const auto& n : names) tried += (tried.empty() ? "" : ", ") + n;
    return unavailable("libnvrtc not found (tried " + tried + ")");
  }
  LIZARD_RETURN_IF_ERROR(nv->bind());
  return std::shared_ptr<const NvrtcLibrary>(std::move(nv));
}

Status NvrtcLibrary::bind() {
  const SharedLibrary& l = lib_;
  nvrtcGetErrorString = l.symbol<decltype(nvrtcGetErrorString)>("nvrtcGetErrorString");
  nvrtcVersion = l.symbol<decltype(nvrtcVersion)>("nvrtcVersion");
  nvrtcGetNumSupportedArchs =
      l.symbol<decltype(nvrtcGetNumSupportedArchs)>("nvrtcGetNumSupportedArchs");
  nvrtcGetSupportedArchs = l.symbol<decltype(nvrtcGetSupportedArchs)>("nvrtcGetSupportedArchs");
  nvrtcCreateProgram = l.symbol<decltype(nvrtcCreateProgram)>("nvrtcCreateProgram");
  nvrtcDestroyProgram = l.symbol<decltype(nvrtcDestroyProgram)>("nvrtcDestroyProgram");
  nvrtcCompileProgram = l.symbol<decltype(nvrtcCompileProgram)>("nvrtcCompileProgram");
  nvrtcGetProgramLogSize = l.symbol<decltype(nvrtcGetProgramLogSize)>("nvrtcGetProgramLogSize");
  nvrtcGetProgramLog = l.symbol<decltype(nvrtcGetProgramLog)>("nvrtcGetProgramLog");
  nvrtcGetCUBINSize = l.symbol<decltype(nvrtcGetCUBINSize)>("nvrtcGetCUBINSize");
  nvrtcGetCUBIN = l.symbol<decltype(nvrtcGetCUBIN)>("nvrtcGetCUBIN");
  if (!nvrtcGetErrorString || !nvrtcVersion || !nvrtcCreateProgram || !nvrtcDestroyProgram ||
      !nvrtcCompileProgram || !nvrtcGetProgramLogSize || !nvrtcGetProgramLog ||
      !nvrtcGetCUBINSize || !nvrtcGetCUBIN)
    return unavailable(path_ + " is too old: lizard needs NVRTC 11.1 or newer (nvrtcGetCUBIN)");
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
    return unavailable(path_ + ": nvrtcVersion failed");
  version_ = major * 1000 + minor * 10;
  return Status::Ok();
}

std::string NvrtcLibrary::version_string() const {
  return std::to_string(version_ / 1000) + "." + std::to_string((version_ % 1000) / 10);
}

std::vector<int> NvrtcLibrary::supported_archs() const {
  int n = 0;
  if (!nvrtcGetNumSupportedArchs || !nvrtcGetSupportedArchs ||
      nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0)
    return {};
  std::vector<int> archs(static_cast<size_t>(n));
  if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS) return {};
  return archs;
}

}  // namespace lizard::cuda
