// bench/metrics_overhead: what the server's metrics add to an iteration —
// ServerMetrics::observe_iteration (four histogram observations) and one
// counter addition (a frame to a worker), each timed over many calls on one
// thread.
//
//   build/bench/metrics_overhead [calls=10000000]
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "server/server_metrics.h"

int main(int argc, char** argv) {
  const long calls = argc > 1 ? std::atol(argv[1]) : 10000000;
  lizard::ServerMetrics metrics(nullptr, nullptr);
  for (int round = 0; round < 3; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < calls; ++i) {
      const double ms = 0.05 + 0.001 * static_cast<double>(i % 1000);
      metrics.observe_iteration(ms, ms * 0.6, ms * 0.1);
    }
    const auto t1 = std::chrono::steady_clock::now();
    for (long i = 0; i < calls; ++i)
      metrics.count_bytes_from_workers(static_cast<uint64_t>(i & 1023));
    const auto t2 = std::chrono::steady_clock::now();
    const double per_iteration = std::chrono::duration<double, std::nano>(t1 - t0).count() / calls;
    const double per_count = std::chrono::duration<double, std::nano>(t2 - t1).count() / calls;
    std::printf("metrics_overhead: observe_iteration %.1f ns, counter add %.1f ns (%ld calls)\n",
                per_iteration, per_count, calls);
  }
  return 0;
}
