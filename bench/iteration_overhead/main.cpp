// bench/iteration_overhead: median wall time per iteration of a trivial
// kernel with 2 local CPU workers on loopback, as the server measures it
// (state out, kernels, aggregates back, fold, update hook), and the median of
// the slower worker's kernel time.
//
//   build/bench/iteration_overhead [iterations=2000]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "local_cluster.h"

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 2000;
  lizard::LocalCluster cluster;
  if (auto st = cluster.start(2); !st.ok()) {
    std::fprintf(stderr, "%s\n", st.message().c_str());
    return 1;
  }
  auto loaded = cluster.load_program(LIZARD_BENCH_DIR "/iteration_overhead/program");
  if (loaded.exit_code != 0) {
    std::fprintf(stderr, "load_program failed: %s\n", loaded.output.c_str());
    return 1;
  }
  std::string hash = lizard::printed_checksum(loaded);
  nlohmann::json body = {{"params", {{"iterations", iterations}}},
                         {"dataset", {{"x", {{"values", std::vector<float>(1024, 1.0f)}}}}},
                         {"max_iterations", iterations}};
  auto r = cluster.post("/runtime/" + hash + "?wait=1", body.dump());
  if (!r.ok() || r->status != 200) {
    std::fprintf(stderr, "run failed: %s\n",
                 r.ok() ? r->body.c_str() : r.status().message().c_str());
    return 1;
  }
  auto rec = nlohmann::json::parse(r->body);
  std::vector<double> ms, kernel;
  for (const auto& t : rec["timings"]) {
    ms.push_back(t["ms"].get<double>());
    kernel.push_back(t["kernel_ms"].get<double>());
  }
  if (ms.empty() || rec["status"] != "done") {
    std::fprintf(stderr, "run did not finish: %s\n", r->body.c_str());
    return 1;
  }
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double p) { return ms[static_cast<size_t>(p * (ms.size() - 1))]; };
  std::printf("iteration_overhead: %zu iterations, 2 CPU workers on 127.0.0.1, 1024 rows\n",
              ms.size());
  std::printf(
      "  median %.3f ms   p10 %.3f ms   p90 %.3f ms   p99 %.3f ms   (target: median <= 0.060 ms, "
      "p99 <= 0.150 ms)\n",
      pct(0.5), pct(0.1), pct(0.9), pct(0.99));
  // The slower worker's kernel time, as its executor measured it: for this
  // trivial kernel, mostly the CPU backend starting and joining its threads.
  std::sort(kernel.begin(), kernel.end());
  std::printf("  kernel median %.3f ms (the slower worker's)\n", kernel[kernel.size() / 2]);
  std::printf("  whole run %.1f ms\n", rec["elapsed_ms"].get<double>());
  return 0;
}
