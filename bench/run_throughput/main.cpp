// bench/run_throughput: many small runs submitted at once through the REST
// API to 4 local CPU workers, as a parameter sweep would submit them.
//
//   1. `runs` one-iteration runs of a 1,024-row program, each asking for one
//      executor, POSTed with ?wait=1 by `clients` concurrent HTTP clients:
//      runs per second, and the latency from POST to the run's record
//      (p50, p99).
//   2. 64 independent runs of a heavier program (k-means on generated
//      points, one executor each): one at a time, then all at once; the
//      speed-up of the second over the first.
//
//   build/bench/run_throughput [runs=1000] [clients=64] [cpu_threads=1] [heavy_rows=500000]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "local_cluster.h"

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// POSTs `bodies` with ?wait=1 from `clients` threads; each run's latency in ms.
// Returns false when a run did not end done.
bool submit_all(const lizard::LocalCluster& c, const std::string& hash,
                const std::vector<json>& bodies, int clients, std::vector<double>* latency,
                std::vector<json>* records = nullptr) {
  latency->assign(bodies.size(), 0.0);
  if (records) records->assign(bodies.size(), json());
  std::atomic<size_t> next{0};
  std::atomic<bool> ok{true};
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t)
    threads.emplace_back([&] {
      for (size_t i = next++; i < bodies.size(); i = next++) {
        const auto t0 = Clock::now();
        auto r = c.post("/runtime/" + hash + "?wait=1", bodies[i].dump());
        (*latency)[i] = ms_between(t0, Clock::now());
        json rec = r.ok() ? json::parse(r->body, nullptr, false) : json();
        if (records) (*records)[i] = rec;
        if (!rec.is_object() || rec.value("status", "") != "done") {
          if (ok.exchange(false))
            std::fprintf(stderr, "a run did not finish: %s\n",
                         r.ok() ? r->body.c_str() : r.status().message().c_str());
        }
      }
    });
  for (auto& t : threads) t.join();
  return ok;
}

// Mean of each phase of the records' `phases`, and of `elapsed_ms`: where a
// run's time goes (accepted to placed, loading, iterations).
void print_phases(const char* label, const std::vector<json>& records) {
  const char* keys[] = {"queued_ms", "planning_ms", "loading_ms", "iterations_ms"};
  std::printf("    %-14s mean ms per run:", label);
  for (const char* k : keys) {
    double sum = 0;
    for (const json& r : records) sum += r["phases"].value(k, 0.0);
    std::printf("  %s %.2f", k, sum / static_cast<double>(records.size()));
  }
  double elapsed = 0;
  for (const json& r : records) elapsed += r.value("elapsed_ms", 0.0);
  std::printf("  elapsed_ms %.2f\n", elapsed / static_cast<double>(records.size()));
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
}

std::string load(const lizard::LocalCluster& c, const std::string& dir) {
  auto r = c.load_program(dir);
  if (r.exit_code != 0)
    std::fprintf(stderr, "load_program %s: %s\n", dir.c_str(), r.output.c_str());
  return r.exit_code == 0 ? lizard::printed_checksum(r) : "";
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int clients = argc > 2 ? std::atoi(argv[2]) : 64;
  const std::string threads = argc > 3 ? argv[3] : "1";
  const int heavy_rows = argc > 4 ? std::atoi(argv[4]) : 500000;
  constexpr int kWorkers = 4;
  lizard::LocalCluster cluster;
  if (auto st = cluster.start(kWorkers, {"--cpu-threads", threads}); !st.ok()) {
    std::fprintf(stderr, "%s\n", st.message().c_str());
    return 1;
  }
  const std::string tiny = load(cluster, LIZARD_BENCH_DIR "/iteration_overhead/program");
  const std::string kmeans = load(cluster, LIZARD_BENCH_DIR "/../examples/kmeans");
  if (tiny.empty() || kmeans.empty()) return 1;

  // 1. Many tiny runs.
  const json tiny_body = {{"params", {{"iterations", 1}}},
                          {"dataset", {{"x", {{"values", std::vector<float>(1024, 1.0f)}}}}},
                          {"max_iterations", 1},
                          {"executors", 1}};
  std::vector<double> latency;
  std::vector<json> warm(std::min(runs, 50), tiny_body);
  if (!submit_all(cluster, tiny, warm, clients, &latency)) return 1;
  const auto t0 = Clock::now();
  if (!submit_all(cluster, tiny, std::vector<json>(static_cast<size_t>(runs), tiny_body), clients,
                  &latency))
    return 1;
  const double wall_ms = ms_between(t0, Clock::now());
  std::printf("run_throughput: %d one-iteration runs of 1,024 rows, executors: 1, %d clients,\n",
              runs, clients);
  std::printf("  %d CPU workers (--cpu-threads %s) on 127.0.0.1, %u hardware threads\n", kWorkers,
              threads.c_str(), std::thread::hardware_concurrency());
  std::printf("  %.0f runs/s   latency p50 %.2f ms   p99 %.2f ms   (target: >= 500 runs/s)\n",
              runs / (wall_ms / 1000.0), percentile(latency, 0.5), percentile(latency, 0.99));

  // 2. 64 heavier runs: one at a time, then all at once.
  std::vector<json> heavy;
  for (int i = 0; i < 64; ++i) {
    std::vector<float> init;
    for (int q = 0; q < 8; ++q)
      for (int j = 0; j < 4; ++j) init.push_back(static_cast<float>(q * 2 + j));
    heavy.push_back(
        {{"params", {{"k", 8}, {"dims", 4}, {"max_iterations", 10}, {"threshold", -1}}},
         {"dataset", {{"points", {{"generate", "blobs"}, {"seed", i + 1}, {"rows", heavy_rows}}}}},
         {"state", {{"centroids", init}}},
         {"executors", 1}});
  }
  const auto s0 = Clock::now();
  std::vector<json> serial_records, concurrent_records;
  if (!submit_all(cluster, kmeans, heavy, 1, &latency, &serial_records)) return 1;
  const double serial_ms = ms_between(s0, Clock::now());
  const auto c0 = Clock::now();
  if (!submit_all(cluster, kmeans, heavy, 64, &latency, &concurrent_records)) return 1;
  const double concurrent_ms = ms_between(c0, Clock::now());
  std::printf("  64 k-means runs (%d points x 4, k 8, 10 iterations, executors: 1):\n", heavy_rows);
  std::printf("  one at a time %.0f ms   all at once %.0f ms   speed-up %.2fx (target: >= 3.5x)\n",
              serial_ms, concurrent_ms, serial_ms / concurrent_ms);
  print_phases("one at a time", serial_records);
  print_phases("all at once", concurrent_records);
  return 0;
}
