#include "exec/cpu/kernel_source.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>
#include <sstream>

#include "common/embedded.h"
#include "program/device_library.h"

namespace lizard {
namespace {

struct Unsupported {
  const char* identifier;
  const char* feature;
};

const Unsupported kUnsupported[] = {
    {"tex1Dfetch", "texture objects (tex1Dfetch)"},
    {"tex1D", "texture objects (tex1D)"},
    {"tex2D", "texture objects (tex2D)"},
    {"tex3D", "texture objects (tex3D)"},
    {"cudaTextureObject_t", "texture objects (cudaTextureObject_t)"},
    {"cudaSurfaceObject_t", "surface objects (cudaSurfaceObject_t)"},
    {"surf2Dwrite", "surface objects (surf2Dwrite)"},
    {"surf2Dread", "surface objects (surf2Dread)"},
    {"cooperative_groups", "cooperative groups (cooperative_groups)"},
    {"this_grid", "cooperative groups grid synchronisation (this_grid)"},
    {"cudaDeviceSynchronize", "dynamic parallelism (cudaDeviceSynchronize in device code)"},
    {"cudaLaunchDevice", "dynamic parallelism (cudaLaunchDevice)"},
    {"asm", "inline PTX assembly (asm)"},
    {"__nanosleep", "__nanosleep"},
};

const char* const kFiberTriggers[] = {"__syncthreads", "__shfl",     "__ballot_sync", "__any_sync",
                                      "__all_sync",    "__syncwarp", "__activemask"};

// The CPU backend's CUDA layer: cuda_cpu.h and the parts it includes.
const char* const kRuntimeHeaders[] = {
    "cuda_cpu.h",         "cuda_cpu_launch_abi.h", "cuda_cpu_types.h",  "cuda_cpu_thread.h",
    "cuda_cpu_atomics.h", "cuda_cpu_math.h",       "cuda_cpu_fibers.h", "cuda_cpu_scheduler.h",
    "cuda_cpu_warp.h",    "cuda_cpu_private.h"};

// The entry's first include: the fibers setting and the runtime.
constexpr const char* kPrelude = "lizard_cpu_prelude.h";

// Headers CUDA sources commonly include; on the CPU backend they are cuda_cpu.h.
const char* const kCudaHeaders[] = {"cuda_runtime.h", "cuda.h", "cuda_runtime_api.h",
                                    "device_launch_parameters.h"};

bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

std::set<std::string> identifiers(const std::string& code) {
  std::set<std::string> out;
  for (size_t i = 0; i < code.size();) {
    if (!is_ident_char(code[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < code.size() && is_ident_char(code[j])) ++j;
    if (!std::isdigit(static_cast<unsigned char>(code[i]))) out.insert(code.substr(i, j - i));
    i = j;
  }
  return out;
}

std::string strip_attributes(std::string type) {
  static const std::regex kAttr(
      R"(__align__\s*\([^)]*\)|alignas\s*\([^)]*\)|__attribute__\s*\(\([^)]*\)\))");
  type = std::regex_replace(type, kAttr, " ");
  const size_t b = type.find_first_not_of(" \t\r\n");
  const size_t e = type.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : type.substr(b, e - b + 1);
}

// True when the brace at `brace` in `code` (stripped) opens a namespace or a
// linkage block (`extern "C" {`), whose contents are at namespace scope.
bool opens_namespace(const std::string& code, size_t brace) {
  static const std::regex kHead(
      R"((^|[^\w])(namespace(\s+[A-Za-z_][\w:]*)?|extern\s*"[^"]*")\s*$)");
  const size_t prev = brace == 0 ? std::string::npos : code.find_last_of(";{}", brace - 1);
  const size_t from = prev == std::string::npos ? 0 : prev + 1;
  return std::regex_search(code.substr(from, brace - from), kHead);
}

// True when `pos` in `code` (stripped) lies inside a function (or class)
// body, false at namespace scope.
bool in_function_body(const std::string& code, size_t pos) {
  std::vector<bool> open;  // per enclosing brace: opens a namespace
  for (size_t i = 0; i < pos && i < code.size(); ++i) {
    if (code[i] == '{')
      open.push_back(opens_namespace(code, i));
    else if (code[i] == '}' && !open.empty())
      open.pop_back();
  }
  return std::find(open.begin(), open.end(), false) != open.end();
}

std::string entry_function(const std::string& name) {
  std::ostringstream o;
  o << "extern \"C\" __attribute__((visibility(\"default\"))) int " << cpu_kernel_symbol(name)
    << "(const lizard_cpu_launch* launch, const void* const* args, char* err, size_t err_len) {\n"
    << "  const global_params_t& p = *static_cast<const global_params_t*>(args[0]);\n"
    << "  const dataset_t& d = *static_cast<const dataset_t*>(args[1]);\n"
    << "  const global_state_t& s = *static_cast<const global_state_t*>(args[2]);\n"
    << "  const agg_res_t& r = *static_cast<const agg_res_t*>(args[3]);\n"
    << "  return ::lizard_cpu::run_launch(launch, err, err_len, [&]() { " << name
    << "(p, d, s, r); });\n"
    << "}\n";
  return o.str();
}

}  // namespace

std::string cpu_kernel_symbol(const std::string& name) {
  return "lizard_cpu_kernel_" + name;
}

std::string strip_comments_and_literals(const std::string& text) {
  std::string out = text;
  enum { kCode, kLine, kBlock, kString, kChar } state = kCode;
  for (size_t i = 0; i < out.size(); ++i) {
    const char c = text[i];
    const char next = i + 1 < text.size() ? text[i + 1] : '\0';
    switch (state) {
      case kCode:
        if (c == '/' && next == '/')
          state = kLine;
        else if (c == '/' && next == '*')
          state = kBlock;
        else if (c == '"')
          state = kString;
        else if (c == '\'')
          state = kChar;
        else
          continue;
        if (state == kLine || state == kBlock) out[i] = ' ';
        continue;
      case kLine:
        if (c == '\n') state = kCode;
        break;
      case kBlock:
        if (c == '*' && next == '/') {
          out[i] = out[i + 1] = ' ';
          ++i;
          state = kCode;
          continue;
        }
        break;
      case kString:
      case kChar:
        if (c == '\\') {
          out[i] = ' ';
          if (i + 1 < out.size() && text[i + 1] != '\n') out[++i] = ' ';
          continue;
        }
        if (c == (state == kString ? '"' : '\'')) {
          state = kCode;
          continue;
        }
        break;
    }
    if (c != '\n') out[i] = ' ';
  }
  return out;
}

std::string find_unsupported_feature(const std::string& code) {
  const std::set<std::string> ids = identifiers(code);
  for (const auto& u : kUnsupported)
    if (ids.count(u.identifier)) return u.feature;
  static const std::regex kTextureRef(R"(\btexture\s*<)");
  if (std::regex_search(code, kTextureRef)) return "texture references (texture<>)";
  if (code.find("<<<") != std::string::npos)
    return "dynamic parallelism (kernel launches with <<<...>>> in device code)";
  return "";
}

bool needs_fibers(const std::string& code) {
  return std::any_of(std::begin(kFiberTriggers), std::end(kFiberTriggers),
                     [&](const char* t) { return code.find(t) != std::string::npos; });
}

std::string rewrite_extern_shared(const std::string& text) {
  static const std::regex kDecl(
      R"(extern\s+__shared__\s+([^;{}]*?)\b([A-Za-z_]\w*)\s*\[\s*\]\s*;)");
  const std::string code = strip_comments_and_literals(text);
  std::string out;
  auto begin = std::sregex_iterator(text.begin(), text.end(), kDecl);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    const std::string type = strip_attributes(m[1].str());
    const size_t at = static_cast<size_t>(m.position(0));
    out.append(text, last, at - last);
    if (in_function_body(code, at))
      out += type + "* const " + m[2].str() + " = reinterpret_cast<" + type +
             "*>(::lizard_cpu_thread.dynamic_shared);";
    else
      out += "static thread_local " + type + "* const " + m[2].str() + " = reinterpret_cast<" +
             type + "*>(::lizard_cpu::dynamic_shared());";
    out.append(std::count(m[0].first, m[0].second, '\n'), '\n');
    last = at + m.length(0);
  }
  out.append(text, last, std::string::npos);
  return out;
}

Result<CpuBuildPlan> plan_cpu_build(const ProgramImage& program) {
  const Manifest& m = program.manifest;
  std::vector<std::string> names{m.cuda_source};
  names.insert(names.end(), m.headers.begin(), m.headers.end());
  CpuBuildPlan plan;
  for (const std::string& name : names) {
    auto it = program.sources.find(name);
    if (it == program.sources.end()) return invalid_argument(name + ": missing from the program");
    const std::string code = strip_comments_and_literals(it->second);
    const std::string feature = find_unsupported_feature(code);
    if (!feature.empty())
      return compile_error(name + ": build failed for the CPU backend: " + feature +
                           " is not supported by the CPU backend");
    plan.fibers |= needs_fibers(code);
    plan.files[name] = rewrite_extern_shared(it->second);
  }
  LIZARD_ASSIGN_OR_RETURN(CpuBuildPlan runtime, runtime_build_plan(plan.fibers));
  for (auto& [name, text] : runtime.files) plan.files[name] = std::move(text);
  for (const auto& [name, text] : device_library_files()) {
    if (text.empty()) return internal_error(name + " is not embedded in this binary");
    if (!plan.files.count(name)) plan.files[name] = std::string(text);
  }
  for (const char* h : kCudaHeaders)
    if (!plan.files.count(h)) plan.files[h] = "#include \"cuda_cpu.h\"\n";
  plan.files["lizard_program.h"] = program.header;
  plan.pch = std::move(runtime.pch);
  plan.flags = std::move(runtime.flags);

  std::ostringstream entry;
  entry << "// Generated by lizard: the CPU backend's entry points for \"" << m.name << "\".\n"
        << "#include \"" << kPrelude << "\"\n#include \"lizard_program.h\"\n#include \""
        << m.cuda_source << "\"\n\n";
  std::set<std::string> done;
  for (const auto* steps : {&m.iterate, &m.generate})
    for (const KernelStep& step : *steps)
      if (done.insert(step.kernel).second) entry << entry_function(step.kernel);
  plan.files["lizard_cpu_entry.cpp"] = entry.str();
  plan.units = {"lizard_cpu_entry.cpp"};
  return plan;
}

Result<CpuBuildPlan> runtime_build_plan(bool fibers) {
  CpuBuildPlan plan;
  plan.fibers = fibers;
  for (const char* name : kRuntimeHeaders) {
    const std::string_view runtime = embedded_file(name);
    if (runtime.empty())
      return internal_error(std::string(name) + " is not embedded in this binary");
    plan.files[name] = std::string(runtime);
  }
  // The runtime, precompiled once per host (HostCompiler): its parse is
  // about half of a small program's build.
  plan.files[kPrelude] = std::string("#define LIZARD_CPU_FIBERS ") + (fibers ? "1" : "0") +
                         "\n#include \"cuda_cpu.h\"\n";
  plan.pch.header = kPrelude;
  plan.pch.inputs = {kPrelude};
  plan.pch.inputs.insert(plan.pch.inputs.end(), std::begin(kRuntimeHeaders),
                         std::end(kRuntimeHeaders));
  plan.flags = {
      "-O3",     "-march=native", "-fno-math-errno", "-fno-strict-aliasing", "-fvisibility=hidden",
      "-pthread"};
  return plan;
}

}  // namespace lizard
