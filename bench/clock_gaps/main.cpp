// clock_gaps: whether this machine takes its cores away.  THREADS threads
// each read the clock in a tight loop for SECONDS and count the gaps between
// two reads longer than 50 us, 200 us and 1 ms: on a quiet machine with a
// core per thread there are none, so gaps are time the thread did not run
// (another tenant, the hypervisor, an interrupt storm).  Run it before
// trusting a machine's tail latencies.
//
//   build/bench/clock_gaps [THREADS=4] [SECONDS=3]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

struct Gaps {
  long over_50us = 0, over_200us = 0, over_1ms = 0;
  long longest_us = 0;
};

Gaps watch_clock(std::chrono::steady_clock::time_point end) {
  Gaps g;
  auto last = std::chrono::steady_clock::now();
  for (auto now = last; now < end; last = now) {
    now = std::chrono::steady_clock::now();
    const long us = std::chrono::duration_cast<std::chrono::microseconds>(now - last).count();
    g.over_50us += us > 50;
    g.over_200us += us > 200;
    g.over_1ms += us > 1000;
    g.longest_us = std::max(g.longest_us, us);
  }
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::max(1, std::atoi(argv[1])) : 4;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 3.0;
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                       std::chrono::duration<double>(seconds));
  std::vector<Gaps> gaps(static_cast<size_t>(threads));
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t)
    running.emplace_back([&gaps, end, t] { gaps[static_cast<size_t>(t)] = watch_clock(end); });
  for (auto& t : running) t.join();
  std::printf("clock_gaps: %d thread(s) reading the clock for %.1f s\n", threads, seconds);
  for (int t = 0; t < threads; ++t) {
    const Gaps& g = gaps[static_cast<size_t>(t)];
    std::printf(
        "  thread %d: gaps over 50 us %ld, over 200 us %ld, over 1 ms %ld, longest %ld us\n", t,
        g.over_50us, g.over_200us, g.over_1ms, g.longest_us);
  }
  return 0;
}
