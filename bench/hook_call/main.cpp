// hook_call: what one update_global_state call costs through the hook
// process (hooks/hook_process.h) against calling the hook in this process,
// with examples/kmeans's host.cpp and its state at a few sizes.
//
//   build/bench/hook_call [calls]          (default 20000 per size)
//
// Prints, per (k, dims): state and aggregate bytes, microseconds per call in
// the hook process (median and 99th percentile) and in process.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "common/shared_library.h"
#include "exec/host_compiler.h"
#include "hooks/hook_host.h"
#include "hooks/hook_process.h"
#include "program/bundle.h"

namespace {

using namespace lizard;
using Clock = std::chrono::steady_clock;

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

int bench(int calls) {
  auto bundle = read_program_dir(LIZARD_KMEANS_EXAMPLE_DIR);
  if (!bundle.ok()) return std::fprintf(stderr, "%s\n", bundle.status().message().c_str()), 1;
  auto image = make_program_image(*bundle);
  if (!image.ok()) return std::fprintf(stderr, "%s\n", image.status().message().c_str()), 1;
  const Manifest& m = image->manifest;
  HostCompiler compiler(
      (std::filesystem::temp_directory_path() / ("lizard-bench-hooks-" + std::to_string(getuid())))
          .string());
  auto files = image->sources;
  files["lizard_program.h"] = image->header;
  auto so = compiler.build_shared(files, {"host.cpp"}, {"-O2", "-fvisibility=default"});
  if (!so.ok()) return std::fprintf(stderr, "%s\n", so.status().message().c_str()), 1;
  auto lib = SharedLibrary::open(*so);
  if (!lib.ok()) return std::fprintf(stderr, "%s\n", lib.status().message().c_str()), 1;
  auto update =
      lib->symbol<int (*)(const void*, const void*, void*, int64_t)>("update_global_state");

  std::printf("%6s %5s %12s %12s %14s %14s %14s\n", "k", "dims", "state_bytes", "agg_bytes",
              "process_p50_us", "process_p99_us", "in_process_us");
  for (auto [k, dims] : std::vector<std::pair<int, int>>{{2, 2}, {16, 8}, {256, 32}, {1024, 128}}) {
    auto p =
        bind_params(m, {{"k", k}, {"dims", dims}, {"max_iterations", 1 << 30}, {"threshold", -1}});
    if (!p.ok()) return std::fprintf(stderr, "%s\n", p.status().message().c_str()), 1;
    SectionBuffer state = make_section(m.state, m, *p).value();
    SectionBuffer agg = make_section(m.aggregate, m, *p).value();
    auto* counts = reinterpret_cast<int64_t*>(agg.data(*agg.find("counts")));
    for (int c = 0; c < k; ++c) counts[c] = 1;

    HookProcessOptions opts;
    auto hp = HookProcess::start(*so, "host.cpp", opts);
    if (!hp.ok()) return std::fprintf(stderr, "%s\n", hp.status().message().c_str()), 1;
    if (auto st = (*hp)->setup(m, *p, RunValues{}, state, agg); !st.ok())
      return std::fprintf(stderr, "%s\n", st.message().c_str()), 1;
    std::vector<double> us;
    us.reserve(calls);
    for (int i = 0; i < calls; ++i) {
      const auto t0 = Clock::now();
      auto done = (*hp)->update_state(agg, &state, i);
      us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      if (!done.ok()) return std::fprintf(stderr, "%s\n", done.status().message().c_str()), 1;
    }

    // The same hook called here, as the server called it before hook processes.
    const auto params = pack_params(params_layout(m), *p);
    const StructLayout sl = state_layout(m), al = aggregate_layout(m);
    const auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i) {
      auto a = pack_section(al, agg, reinterpret_cast<uint64_t>(agg.bytes.data()));
      auto s = pack_section(sl, state, reinterpret_cast<uint64_t>(state.bytes.data()));
      update(params.data(), a.data(), s.data(), i);
      unpack_section_values(sl, s, &state);
    }
    const double here_us =
        std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / calls;
    std::printf("%6d %5d %12zu %12zu %14.1f %14.1f %14.2f\n", k, dims, state.bytes.size(),
                agg.bytes.size(), percentile(us, 0.5), percentile(us, 0.99), here_us);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // The hook processes are this binary, started as `hook_call hook-host LIB.so`.
  if (auto status = lizard::hook_host_command(argc, argv)) return *status;
  return bench(argc > 1 ? std::atoi(argv[1]) : 20000);
}
