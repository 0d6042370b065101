#include "exec/executor_factory.h"

#include "exec/cpu/cpu_executor.h"
#include "exec/cuda/cuda_executor.h"

namespace lizard {
namespace {

Result<std::vector<int>> parse_gpu_list(const std::string& s) {
  std::vector<int> out;
  if (s.empty() || s == "all") return out;
  auto parse_int = [&](const std::string& t) -> Result<int> {
    try {
      size_t used = 0;
      int v = std::stoi(t, &used);
      if (used == t.size() && v >= 0) return v;
    } catch (...) {
    }
    return invalid_argument("--gpus: '" + s + "' is not all, a count, or a list such as 0,2");
  };
  if (s.find(',') == std::string::npos) {
    LIZARD_ASSIGN_OR_RETURN(int n, parse_int(s));
    if (n == 0) return invalid_argument("--gpus 0 selects no GPU; use --backend cpu instead");
    for (int i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    std::string tok =
        s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    LIZARD_ASSIGN_OR_RETURN(int v, parse_int(tok));
    out.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

Result<std::vector<std::unique_ptr<Executor>>> make_executors(const BackendOptions& o,
                                                              std::string* note) {
  if (o.backend != "auto" && o.backend != "cuda" && o.backend != "cpu")
    return invalid_argument("--backend must be auto, cuda or cpu (got '" + o.backend + "')");
  std::vector<std::unique_ptr<Executor>> out;
  if (o.backend != "cpu") {
    CudaOptions c;
    c.cuda_path = o.cuda_path;
    c.cache_dir = o.cache_dir.empty() ? "" : o.cache_dir + "/cubin";
    LIZARD_ASSIGN_OR_RETURN(c.gpus, parse_gpu_list(o.gpus));
    auto gpus = make_cuda_executors(c);
    if (gpus.ok()) {
      out = std::move(gpus).value();
    } else if (o.backend == "cuda" || gpus.status().code() == Code::kInvalidArgument) {
      return gpus.status();
    } else if (note) {
      *note = "no usable GPU (" + gpus.status().message() + "); using the CPU backend";
    }
  }
  if (out.empty()) {
    CpuExecutorOptions c;
    c.threads = o.cpu_threads;
    c.cache_dir = o.cache_dir.empty() ? "" : o.cache_dir + "/cpu";
    out.push_back(make_cpu_executor(c));
  }
  return out;
}

}  // namespace lizard
