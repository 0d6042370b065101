// first_tier: what each candidate for a run's first build costs to make and
// how fast its kernels run, side by side, to choose the build a run with new
// specialised values begins on.  For every case (examples/kmeans at three
// (K, D) shapes, examples/logreg) and every candidate, a fresh process of
// this program (so that NVRTC's in-process reuse and warm caches count for
// nothing) compiles the run's iterate kernels (KernelSet::kIterate) with the
// candidate's options, puts the result where CudaExecutor finds it, then
// times one iteration step on GPU 0 through CudaExecutor.
//
// Candidates: NVRTC option sets (the optimised build's options plus extra
// ones), "whole:" ones that time the same options over every kernel of the
// program (what a build cost before kernel sets), and "jitN": NVRTC to PTX,
// then the driver's JIT at CU_JIT_OPTIMIZATION_LEVEL N.
//
//   first_tier [--rows=16777216] [--iters=10] [--repeat=1] [--json=FILE]
//              [--cases=kmeans16x32,kmeans64x8,kmeans256x64,logreg32]
//              [--candidates=O3,xO2,xO1,min,min_xO1,mid,mid_xO1,jit1,jit2,jit3,whole_O3,whole_mid]
//   first_tier --child CASE CANDIDATE ROWS ITERS    (one measurement, a JSON line out)
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "common/status.h"
#include "first_tier/measure.h"

namespace fs = std::filesystem;
using namespace lizard;
using nlohmann::json;

namespace {

struct Args {
  int64_t rows = int64_t{1} << 24;
  int iters = 10;
  int repeat = 1;  // fresh processes per case and candidate: medians are shown
  std::string json_path;
  std::vector<std::string> cases = {"kmeans16x32", "kmeans64x8", "kmeans256x64", "logreg32"};
  std::vector<std::string> candidates = {"O3",      "xO2",  "xO1",      "min",
                                         "min_xO1", "mid",  "mid_xO1",  "jit1",
                                         "jit2",    "jit3", "whole_O3", "whole_mid"};
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, ',');)
    if (!part.empty()) out.push_back(part);
  return out;
}

// Runs `self --child ...` and returns the JSON line it prints.
Result<json> measure(const std::string& self, const std::string& c, const std::string& cand,
                     const Args& a) {
  int out[2];
  if (pipe(out) != 0) return internal_error("pipe failed");
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    close(out[1]);
    const std::string rows = std::to_string(a.rows), iters = std::to_string(a.iters);
    execl(self.c_str(), self.c_str(), "--child", c.c_str(), cand.c_str(), rows.c_str(),
          iters.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  const size_t line = text.rfind("{\"");
  if (line == std::string::npos)
    return internal_error(c + " " + cand + ": the measuring process printed no result");
  return json::parse(text.substr(line));
}

// The median of each time over a case's and candidate's measurements (the
// last one's record otherwise), with every compile time in "compile_ms_all".
json summarise(const std::vector<json>& runs) {
  json out = runs.back();
  std::map<std::string, std::vector<double>> times;
  for (const json& r : runs)
    for (const char* key : {"compile_ms", "jit_ms", "nvrtc_ms", "kernel_ms"})
      if (r.contains(key)) times[key].push_back(r[key].get<double>());
  out["compile_ms_all"] = times["compile_ms"];
  for (auto& [key, v] : times) {
    std::sort(v.begin(), v.end());
    out[key] = v[v.size() / 2];
  }
  return out;
}

// Every case and candidate once per round, `a.repeat` rounds, so that a
// drift of the machine over the minutes spreads over all of them alike.
int parent(const char* self, const Args& a) {
  std::map<std::pair<std::string, std::string>, std::vector<json>> runs;
  std::map<std::pair<std::string, std::string>, std::string> errors;
  for (int round = 0; round < a.repeat; ++round)
    for (const std::string& c : a.cases)
      for (const std::string& cand : a.candidates) {
        if (errors.count({c, cand})) continue;
        Result<json> r = measure(self, c, cand, a);
        if (!r.ok() || r->contains("error")) {
          errors[{c, cand}] = r.ok() ? (*r)["error"].get<std::string>() : r.status().message();
          continue;
        }
        runs[{c, cand}].push_back(*r);
      }
  std::printf("%-13s %-12s %11s %9s %11s %8s  %s\n", "case", "candidate", "compile ms", "(jit ms)",
              "kernel ms", "vs O3", "check");
  json all = json::array();
  for (const std::string& c : a.cases) {
    double o3_kernel = 0;
    for (const std::string& cand : a.candidates) {
      if (auto e = errors.find({c, cand}); e != errors.end()) {
        std::printf("%-13s %-12s  failed: %s\n", c.c_str(), cand.c_str(), e->second.c_str());
        continue;
      }
      const json m = summarise(runs[{c, cand}]);
      const double kernel = m.value("kernel_ms", 0.0);
      if (cand == "O3") o3_kernel = kernel;
      char vs[32] = "";
      if (kernel > 0 && o3_kernel > 0) std::snprintf(vs, sizeof vs, "%.2fx", kernel / o3_kernel);
      std::printf("%-13s %-12s %11.1f %9.1f %11.3f %8s  %s\n", c.c_str(), cand.c_str(),
                  m.value("compile_ms", 0.0), m.value("jit_ms", 0.0), kernel, vs,
                  m.value("check", std::string()).c_str());
      all.push_back(m);
    }
  }
  if (!a.json_path.empty()) std::ofstream(a.json_path) << json{{"first_tier", all}}.dump(1);
  return errors.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 6 && std::string(argv[1]) == "--child") {
    const json r = first_tier::measure_in_this_process(argv[2], argv[3], std::stoll(argv[4]),
                                                       std::stoi(argv[5]));
    std::printf("%s\n", r.dump().c_str());
    return 0;
  }
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto value = [&](const std::string& key) {
      return s.rfind(key + "=", 0) == 0 ? s.substr(key.size() + 1) : std::string();
    };
    if (auto v = value("--rows"); !v.empty()) a.rows = std::stoll(v);
    if (auto v = value("--iters"); !v.empty()) a.iters = std::stoi(v);
    if (auto v = value("--json"); !v.empty()) a.json_path = v;
    if (auto v = value("--repeat"); !v.empty()) a.repeat = std::max(1, std::stoi(v));
    if (auto v = value("--cases"); !v.empty()) a.cases = split(v);
    if (auto v = value("--candidates"); !v.empty()) a.candidates = split(v);
  }
  return parent("/proc/self/exe", a);
}
