// cpu_backend: times the assign kernel of examples/kmeans (k and dims
// specialised to 16) through CpuExecutor against a plain C++ loop doing the
// same work on the same number of threads, and prints both times per
// iteration and the ratio.  Labels and counts must match.
//
//   cpu_backend [--n=1000000] [--iters=10] [--threads=0] [--dir=examples/kmeans]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "exec/cpu/cpu_executor.h"
#include "program/bundle.h"
#include "program/codegen.h"

using namespace lizard;

namespace {

constexpr int kK = 16;
constexpr int kD = 16;

struct Args {
  int64_t n = 1000000;
  int iters = 10;
  int threads = 0;
  std::string dir = LIZARD_KMEANS_EXAMPLE_DIR;
};

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s.rfind("--n=", 0) == 0) a.n = std::stoll(s.substr(4));
    if (s.rfind("--iters=", 0) == 0) a.iters = std::stoi(s.substr(8));
    if (s.rfind("--threads=", 0) == 0) a.threads = std::stoi(s.substr(10));
    if (s.rfind("--dir=", 0) == 0) a.dir = s.substr(6);
  }
  return a;
}

Result<ProgramImage> load_program(const std::string& dir) {
  LIZARD_ASSIGN_OR_RETURN(ProgramBundle bundle, read_program_dir(dir));
  return make_program_image(bundle);
}

std::vector<float> make_points(int64_t n) {
  std::vector<float> pts(static_cast<size_t>(n) * kD);
  uint64_t s = 0x2545f4914f6cdd1dull;
  for (float& v : pts) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    v = static_cast<float>((s >> 40) * (1.0 / (1 << 24)) * 20 - 10);
  }
  return pts;
}

struct Totals {
  std::vector<float> sums = std::vector<float>(kK * kD, 0.f);
  std::vector<int64_t> counts = std::vector<int64_t>(kK, 0);
};

// The same work as the kernel, as one would write it for a CPU: each thread
// takes a contiguous range with private sums, merged at the end.
Totals plain_assign(const std::vector<float>& pts, const std::vector<float>& cent, int64_t n,
                    int threads, std::vector<int32_t>* labels) {
  std::vector<Totals> part(threads);
  std::vector<std::thread> th;
  for (int t = 0; t < threads; ++t) {
    th.emplace_back([&, t] {
      Totals& mine = part[t];
      const int64_t lo = n * t / threads, hi = n * (t + 1) / threads;
      for (int64_t r = lo; r < hi; ++r) {
        const float* p = pts.data() + r * kD;
        int best = 0;
        float best_d = INFINITY;
        for (int c = 0; c < kK; ++c) {
          float d = 0.f;
          for (int j = 0; j < kD; ++j) {
            const float x = p[j] - cent[c * kD + j];
            d += x * x;
          }
          if (d < best_d) {
            best_d = d;
            best = c;
          }
        }
        (*labels)[r] = best;
        for (int j = 0; j < kD; ++j) mine.sums[best * kD + j] += p[j];
        ++mine.counts[best];
      }
    });
  }
  for (auto& t : th) t.join();
  Totals out;
  for (const Totals& p : part) {
    for (int i = 0; i < kK * kD; ++i) out.sums[i] += p.sums[i];
    for (int i = 0; i < kK; ++i) out.counts[i] += p.counts[i];
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int fail(const Status& s) {
  std::fprintf(stderr, "cpu_backend: %s\n", s.message().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse_args(argc, argv);
  auto program = load_program(a.dir);
  if (!program.ok()) return fail(program.status());
  CpuExecutorOptions o;
  o.threads = a.threads;
  o.cache_dir = (std::filesystem::temp_directory_path() / "lizard-cpu-backend-bench").string();
  auto exec = make_cpu_executor(o);
  const int threads = exec->info().sm_count;
  const std::vector<float> pts = make_points(a.n);
  const std::vector<float> cent(pts.begin(), pts.begin() + kK * kD);

  auto params = bind_params(program->manifest, {{"k", kK}, {"dims", kD}});
  if (!params.ok()) return fail(params.status());
  const auto t_build = std::chrono::steady_clock::now();
  if (Status s = exec->build(*program); !s.ok()) return fail(s);
  const double build_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_build).count();
  PartitionData part;
  part.rows = a.n;
  part.fields = {std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(pts.data()),
                                      reinterpret_cast<const uint8_t*>(pts.data() + pts.size())),
                 {}};
  if (Status s = exec->begin_run(*program, *params, std::move(part)); !s.ok()) return fail(s);
  auto state = make_section(program->manifest.state, program->manifest, *params);
  auto agg = make_section(program->manifest.aggregate, program->manifest, *params);
  const FieldSlot* centroids = state->find("centroids");
  const FieldSlot* counts_slot = agg->find("counts");
  if (!centroids || !counts_slot)
    return fail(invalid_argument(a.dir + ": expected state.centroids and aggregate.counts"));
  std::memcpy(state->data(*centroids), cent.data(), cent.size() * sizeof(float));

  std::vector<double> backend_ms, plain_ms;
  std::vector<int32_t> labels(a.n);
  Totals plain;
  for (int i = 0; i < a.iters; ++i) {
    IterationStats st;
    if (Status s = exec->iterate(*state, i, &*agg, &st); !s.ok()) return fail(s);
    backend_ms.push_back(st.total_ms);
    const auto t = std::chrono::steady_clock::now();
    plain = plain_assign(pts, cent, a.n, threads, &labels);
    plain_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count());
  }
  auto outputs = exec->end_run(true);
  if (!outputs.ok()) return fail(outputs.status());

  std::vector<int64_t> counts(kK);
  std::memcpy(counts.data(), agg->data(*counts_slot), kK * sizeof(int64_t));
  const std::vector<uint8_t>& out_labels = (*outputs)[1];  // dataset: points, labels
  const bool same = counts == plain.counts && out_labels.size() == labels.size() * 4 &&
                    std::memcmp(out_labels.data(), labels.data(), out_labels.size()) == 0;
  const double b = median(backend_ms), p = median(plain_ms);
  std::printf("k-means assign: n=%lld D=%d K=%d threads=%d iters=%d (build %.0f ms)\n",
              static_cast<long long>(a.n), kD, kK, threads, a.iters, build_ms);
  std::printf("  CpuExecutor   %8.2f ms/iteration (median)\n", b);
  std::printf("  plain C++     %8.2f ms/iteration (median)\n", p);
  std::printf("  ratio         %8.2fx  (results %s)\n", b / p, same ? "match" : "DIFFER");
  return same ? 0 : 1;
}
