// bench/checkpoint_cost: what the run store's per-iteration checkpoint costs
// the run driver — one SQLite transaction replacing the run's state and
// aggregate (WAL, synchronous=NORMAL) — in microseconds per iteration.
// The sections default to examples/kmeans's with k = 16, dims = 32.
//
//   checkpoint_cost [--iters=5000] [--state-bytes=2052] [--aggregate-bytes=2176] [--dir=/tmp]
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "server/run_store.h"

namespace {
std::string flag(int argc, char** argv, const std::string& name, const std::string& def) {
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], name.c_str(), name.size()) == 0 && argv[i][name.size()] == '=')
      return argv[i] + name.size() + 1;
  return def;
}
}  // namespace

int main(int argc, char** argv) {
  const int iters = std::stoi(flag(argc, argv, "--iters", "5000"));
  const size_t state_bytes = std::stoul(flag(argc, argv, "--state-bytes", "2052"));
  const size_t agg_bytes = std::stoul(flag(argc, argv, "--aggregate-bytes", "2176"));
  std::string tmpl = flag(argc, argv, "--dir", "/tmp") + "/lizard-checkpoint-XXXXXX";
  if (!mkdtemp(tmpl.data())) return 1;
  auto store = lizard::RunStore::open(tmpl);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().message().c_str());
    return 1;
  }
  lizard::RunCheckpoint cp{0, false, std::string(state_bytes, 's'), std::string(agg_bytes, 'a')};
  std::vector<double> us;
  for (int i = 0; i < iters; ++i) {
    cp.iteration = i + 1;
    std::memcpy(cp.state.data(), &i, sizeof i);
    const auto t0 = std::chrono::steady_clock::now();
    lizard::Status st = (*store)->save_checkpoint("r1", cp);
    us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.message().c_str());
      return 1;
    }
  }
  std::sort(us.begin(), us.end());
  double sum = 0;
  for (double u : us) sum += u;
  std::printf(
      "checkpoint of %zu + %zu bytes, %d iterations: median %.1f us, mean %.1f us, p99 %.1f us, "
      "p99.9 %.1f us, max %.1f us\n",
      state_bytes, agg_bytes, iters, us[us.size() / 2], sum / static_cast<double>(us.size()),
      us[us.size() * 99 / 100], us[us.size() * 999 / 1000], us.back());
  store->reset();
  std::filesystem::remove_all(tmpl);
  return 0;
}
