// bench/kmeans_e2e: k-means through the whole system — a real server and one
// worker on 127.0.0.1 — on N points (default 16,000,000 x 32 float32, k = 16):
// the median time per iteration as the record gives it (state out, kernel,
// aggregates back, fold, update hook; measured on the worker when it drives
// the loop), the worker's kernel time, and the iterations' wall time at the
// server divided by their number.
//
//   kmeans_e2e [--n=16000000] [--iters=30] [--backend=cuda] [--program=examples/kmeans]
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "dataset/npy.h"
#include "local_cluster.h"

namespace {

std::string flag(int argc, char** argv, const std::string& name, const std::string& def) {
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], name.c_str(), name.size()) == 0 && argv[i][name.size()] == '=')
      return argv[i] + name.size() + 1;
  return def;
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

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = std::stoll(flag(argc, argv, "--n", "16000000"));
  const int iters = std::stoi(flag(argc, argv, "--iters", "30"));
  const std::string backend = flag(argc, argv, "--backend", "cuda");
  const std::string program = flag(argc, argv, "--program", LIZARD_BENCH_DIR "/../examples/kmeans");
  const int d = 32, k = 16;

  lizard::LocalCluster cluster;
  if (auto st = cluster.start(0); !st.ok())
    return std::fprintf(stderr, "%s\n", st.message().c_str()), 1;
  if (!cluster.add_worker({"--backend", backend}).ok() || !cluster.wait_for_workers(1, 120).ok())
    return std::fprintf(stderr, "the worker did not join (logs in %s)\n", cluster.dir().c_str()), 1;
  auto loaded = cluster.load_program(program);
  if (loaded.exit_code != 0)
    return std::fprintf(stderr, "load_program: %s\n", loaded.output.c_str()), 1;
  const std::string hash = lizard::printed_checksum(loaded);

  const std::string path = cluster.dir() + "/points.npy";
  write_points(path, n, d, k);
  std::vector<float> init;
  for (int c = 0; c < k; ++c)
    for (int j = 0; j < d; ++j) init.push_back(static_cast<float>(c * ((j % 4) + 1)) + 0.25f);
  nlohmann::json body = {
      {"params", {{"k", k}, {"dims", d}, {"max_iterations", iters}, {"threshold", -1}}},
      {"dataset", {{"points", {{"path", path}}}}},
      {"state", {{"centroids", init}}},
      {"outputs", nlohmann::json::array()}};
  auto r = cluster.post("/runtime/" + hash + "?wait=1", body.dump());
  if (!r.ok() || r->status != 200)
    return std::fprintf(stderr, "run failed: %s\n",
                        r.ok() ? r->body.c_str() : r.status().message().c_str()),
           1;
  auto rec = nlohmann::json::parse(r->body);
  if (rec["status"] != "done") return std::fprintf(stderr, "run failed: %s\n", r->body.c_str()), 1;
  std::vector<double> ms, kernel;
  bool first = true;
  for (const auto& t : rec["timings"]) {
    if (first) {  // the first iteration includes warm-up
      first = false;
      continue;
    }
    ms.push_back(t["ms"]);
    kernel.push_back(t["kernel_ms"]);
  }
  std::sort(ms.begin(), ms.end());
  std::sort(kernel.begin(), kernel.end());
  auto hw = nlohmann::json::parse(cluster.get("/clients")->body)[0]["hardware"]["executors"][0];
  std::printf(
      "kmeans_e2e: N=%lld D=%d K=%d float32, 1 %s worker (%s) on 127.0.0.1, %zu timed iterations\n",
      static_cast<long long>(n), d, k, backend.c_str(), hw.value("name", "?").c_str(), ms.size());
  std::printf("  end-to-end per iteration: median %.3f ms (min %.3f, max %.3f)\n",
              ms[ms.size() / 2], ms.front(), ms.back());
  std::printf("  kernel per iteration:     median %.3f ms\n", kernel[kernel.size() / 2]);
  // The iterations' wall time at the server, whoever drove them: with the
  // worker-driven loop the per-iteration figures above are the worker's.
  const nlohmann::json& phases = rec["phases"];
  const double wall = phases.value("iterations_ms", 0.0) / static_cast<double>(iters);
  std::printf(
      "  iterations at the server: %.3f ms each (%s), overhead beyond the kernel %.0f us\n", wall,
      phases.value("worker_loop", false) ? "the worker drove the loop" : "the server drove it",
      (wall - kernel[kernel.size() / 2]) * 1e3);
  std::printf("  whole run (incl. loading %lld rows): %.1f ms\n", static_cast<long long>(n),
              rec["elapsed_ms"].get<double>());
  return 0;
}
