// bench/kmeans_e2e: k-means through the whole system — a real server and one
// worker on 127.0.0.1 — on N points (default 16,000,000 x 32 float32, k = 16):
// the median time per iteration as the record gives it (state out, kernel,
// aggregates back, fold, update hook; measured on the worker when it drives
// the loop), the worker's kernel time, and the iterations' wall time at the
// server divided by their number.
//
// With --gpus given more than once, each value starts a fresh server and a
// worker given those GPUs (`lizard client --gpus`), runs the same points on
// it, and the last lines compare every configuration with the first: how a
// worker's iterations speed up with its GPUs.
//
//   kmeans_e2e [--n=16000000] [--iters=30] [--backend=cuda] [--program=examples/kmeans]
//              [--gpus=count=1 --gpus=count=2 ...]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "dataset/npy.h"
#include "local_cluster.h"

namespace {

std::vector<std::string> flags(int argc, char** argv, const std::string& name) {
  std::vector<std::string> out;
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], name.c_str(), name.size()) == 0 && argv[i][name.size()] == '=')
      out.emplace_back(argv[i] + name.size() + 1);
  return out;
}

std::string flag(int argc, char** argv, const std::string& name, const std::string& def) {
  auto given = flags(argc, argv, name);
  return given.empty() ? def : given.front();
}

// Points around 16 centres, from a counter-based hash (fast, reproducible).
void write_points(const std::string& path, int64_t n, int d, int k) {
  std::ofstream out(path, std::ios::binary);
  out << lizard::npy_header(lizard::DType::kFloat32, {n, d});
  std::vector<float> chunk;
  const int64_t per = 1 << 20;
  for (int64_t first = 0; first < n; first += per) {
    const int64_t rows = std::min(per, n - first);
    chunk.resize(static_cast<size_t>(rows) * d);
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t row = first + i;
      for (int j = 0; j < d; ++j) {
        uint64_t h = static_cast<uint64_t>(row) * 0x9E3779B97F4A7C15ull + j * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
        h *= 0x94D049BB133111EBull;
        h ^= h >> 29;
        float noise = static_cast<float>(h >> 40) / float(1 << 24) - 0.5f;
        chunk[static_cast<size_t>(i) * d + j] =
            static_cast<float>((row % k) * ((j % 4) + 1)) + noise;
      }
    }
    out.write(reinterpret_cast<const char*>(chunk.data()),
              static_cast<std::streamsize>(chunk.size() * 4));
  }
}

struct Options {
  int64_t n = 0;
  int iters = 0;
  std::string backend, program, gpus;  // gpus: "" for the worker's default
};

// One configuration's figures, in milliseconds per iteration.
struct Figures {
  double end_to_end = 0, kernel = 0, at_server = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Starts a server and one worker, runs k-means over `points` and prints the
// figures; returns false (having said why) when anything fails.
bool measure(const Options& o, const std::string& points, Figures* out) {
  const int d = 32, k = 16;
  lizard::LocalCluster cluster;
  if (auto st = cluster.start(0); !st.ok())
    return std::fprintf(stderr, "%s\n", st.message().c_str()), false;
  std::vector<std::string> worker = {"--backend", o.backend};
  if (!o.gpus.empty()) worker.insert(worker.end(), {"--gpus", o.gpus});
  if (!cluster.add_worker(worker).ok() || !cluster.wait_for_workers(1, 120).ok())
    return std::fprintf(stderr, "the worker did not join (logs in %s)\n", cluster.dir().c_str()),
           false;
  auto loaded = cluster.load_program(o.program);
  if (loaded.exit_code != 0)
    return std::fprintf(stderr, "load_program: %s\n", loaded.output.c_str()), false;
  const std::string hash = lizard::printed_checksum(loaded);
  std::vector<float> init;
  for (int c = 0; c < k; ++c)
    for (int j = 0; j < d; ++j) init.push_back(static_cast<float>(c * ((j % 4) + 1)) + 0.25f);
  nlohmann::json body = {
      {"params", {{"k", k}, {"dims", d}, {"max_iterations", o.iters}, {"threshold", -1}}},
      {"dataset", {{"points", {{"path", points}}}}},
      {"state", {{"centroids", init}}},
      {"outputs", nlohmann::json::array()}};
  auto r = cluster.post("/runtime/" + hash + "?wait=1", body.dump());
  if (!r.ok() || r->status != 200)
    return std::fprintf(stderr, "run failed: %s\n",
                        r.ok() ? r->body.c_str() : r.status().message().c_str()),
           false;
  auto rec = nlohmann::json::parse(r->body);
  if (rec["status"] != "done")
    return std::fprintf(stderr, "run failed: %s\n", r->body.c_str()), false;
  std::vector<double> ms, kernel;
  bool first = true;
  double first_ms = 0, first_kernel_ms = 0, all_ms = 0;
  for (const auto& t : rec["timings"]) {
    all_ms += t["ms"].get<double>();
    if (first) {  // the first iteration includes warm-up
      first = false;
      first_ms = t["ms"].get<double>();
      first_kernel_ms = t["kernel_ms"].get<double>();
      continue;
    }
    ms.push_back(t["ms"]);
    kernel.push_back(t["kernel_ms"]);
  }
  if (ms.empty()) return std::fprintf(stderr, "run has no timed iterations\n"), false;
  std::string names;
  const auto clients = nlohmann::json::parse(cluster.get("/clients")->body);
  const auto& executors = clients[0]["hardware"]["executors"];
  for (const auto& e : executors) names += (names.empty() ? "" : ", ") + e.value("name", "?");
  std::printf(
      "kmeans_e2e: N=%lld D=%d K=%d float32, 1 %s worker of %zu executor(s)%s%s (%s) on "
      "127.0.0.1, %zu timed iterations\n",
      static_cast<long long>(o.n), d, k, o.backend.c_str(), executors.size(),
      o.gpus.empty() ? "" : ", --gpus ", o.gpus.c_str(), names.c_str(), ms.size());
  out->end_to_end = median(ms);
  out->kernel = median(kernel);
  std::sort(ms.begin(), ms.end());
  std::printf("  end-to-end per iteration: median %.3f ms (min %.3f, max %.3f)\n", out->end_to_end,
              ms.front(), ms.back());
  std::printf("  kernel per iteration:     median %.3f ms (the slowest executor's)\n", out->kernel);
  std::printf("  first iteration:          %.3f ms, kernel %.3f ms (not in the figures above)\n",
              first_ms, first_kernel_ms);
  // The iterations' wall time at the server, whoever drove them: with the
  // worker-driven loop the per-iteration figures above are the worker's.
  const nlohmann::json& phases = rec["phases"];
  out->at_server = phases.value("iterations_ms", 0.0) / static_cast<double>(o.iters);
  std::printf(
      "  iterations at the server: %.3f ms each (%s), overhead beyond the kernel %.0f us\n",
      out->at_server,
      phases.value("worker_loop", false) ? "the worker drove the loop" : "the server drove it",
      (out->at_server - out->kernel) * 1e3);
  std::printf("  of which outside the iterations' own time (loop start and end): %.3f ms\n",
              phases.value("iterations_ms", 0.0) - all_ms);
  std::printf("  whole run (incl. loading %lld rows): %.1f ms\n", static_cast<long long>(o.n),
              rec["elapsed_ms"].get<double>());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  o.n = std::stoll(flag(argc, argv, "--n", "16000000"));
  o.iters = std::stoi(flag(argc, argv, "--iters", "30"));
  o.backend = flag(argc, argv, "--backend", "cuda");
  o.program = flag(argc, argv, "--program", LIZARD_BENCH_DIR "/../examples/kmeans");
  std::vector<std::string> gpus = flags(argc, argv, "--gpus");
  if (gpus.empty()) gpus.emplace_back();

  char tmpl[] = "/tmp/kmeans_e2e.XXXXXX";
  if (!mkdtemp(tmpl)) return std::perror("mkdtemp"), 1;
  const std::string points = std::string(tmpl) + "/points.npy";
  write_points(points, o.n, 32, 16);
  std::vector<Figures> figures;
  bool ok = true;
  for (const std::string& g : gpus) {
    o.gpus = g;
    Figures f;
    if (!(ok = measure(o, points, &f))) break;
    figures.push_back(f);
  }
  std::filesystem::remove_all(tmpl);
  if (!ok) return 1;
  for (size_t i = 1; i < figures.size(); ++i)
    std::printf(
        "  --gpus %s against --gpus %s: %.2fx end to end per iteration, %.2fx at the "
        "server, %.2fx in the kernel\n",
        gpus[i].c_str(), gpus[0].c_str(), figures[0].end_to_end / figures[i].end_to_end,
        figures[0].at_server / figures[i].at_server, figures[0].kernel / figures[i].kernel);
  return 0;
}
