// bench/many_workers: how the server's costs grow with the number of
// workers.  Starts a real `lizard server` on 127.0.0.1 (a free port, a temp
// state directory) for each worker count N, connects N fake workers over
// real WebSockets from this process (fake_fleet.h: they speak the protocol
// and answer each iteration with an aggregate prepared in advance), and
// prints per N and aggregate size: the server's time per iteration (median
// of the run record's timings, and wall / iterations), the bytes in and out
// per iteration (counted on the workers), the server's memory per connected
// worker (VmRSS before and after they join, / N), the server's CPU time per
// iteration (its utime + stime over the run / iterations), the time for all N to join
// (dial → listed by GET /clients) and for a program's registration to reach
// all N (load_program → every worker has it).  Writes many_workers.json to
// --out (or $OUT, or the current directory).
//
//   build/bench/many_workers [--workers=2,8,32,128,256,1024] [--agg-kb=4,256]
//                            [--iters=20] [--io-threads=2] [--max-agg-mb=64] [--out=DIR]
//                            [--fan-in=0] [--workers-per-host=1]
//
// --fan-in is the server's --fold-fan-in: with 2 or more, runs on more
// workers fold along a tree, which the fake workers simulate (fake_fleet.h),
// and the server takes only the tree's senders' results; `senders` says how
// many.  --workers-per-host sets how many fake workers share one loopback
// address, which the server takes for a host (they fold there first).
//
// Runs whose aggregates add up to more than --max-agg-mb per iteration
// (N x agg) are skipped, so that the default finishes in minutes on 2 cores.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fake_fleet.h"
#include "local_cluster.h"

namespace {

using lizard::LocalCluster;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

struct Options {
  std::vector<int> workers = {2, 8, 32, 128, 256, 1024};
  std::vector<int> agg_kb = {4, 256};
  int iters = 20;
  int io_threads = 2;
  double max_agg_mb = 64;
  int fan_in = 0;  // the server's --fold-fan-in (0: every result to the server)
  int workers_per_host = 1;
  std::string out;
};

std::vector<int> int_list(const std::string& s) {
  std::vector<int> v;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) v.push_back(std::atoi(item.c_str()));
  return v;
}

Options parse_flags(int argc, char** argv) {
  Options o;
  if (const char* out = std::getenv("OUT")) o.out = out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      const std::string f = std::string(flag) + "=";
      return a.rfind(f, 0) == 0 ? argv[i] + f.size() : nullptr;
    };
    if (auto v = value("--workers"))
      o.workers = int_list(v);
    else if (auto v = value("--agg-kb"))
      o.agg_kb = int_list(v);
    else if (auto v = value("--iters"))
      o.iters = std::atoi(v);
    else if (auto v = value("--io-threads"))
      o.io_threads = std::atoi(v);
    else if (auto v = value("--max-agg-mb"))
      o.max_agg_mb = std::atof(v);
    else if (auto v = value("--out"))
      o.out = v;
    else if (auto v = value("--fan-in"))
      o.fan_in = std::atoi(v);
    else if (auto v = value("--workers-per-host"))
      o.workers_per_host = std::atoi(v);
    else {
      std::fprintf(stderr, "unknown flag %s (see the comment at the top of main.cpp)\n", argv[i]);
      std::exit(2);
    }
  }
  if (o.out.empty()) o.out = ".";
  return o;
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The process's resident memory, from /proc/<pid>/status (bytes; 0 if unknown).
uint64_t rss_bytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10) * 1024;
  return 0;
}

// The process's CPU time so far, user and system (seconds; 0 if unknown).
double cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::stringstream fields(stat.substr(close + 2));
  std::string f;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i)
    if (i == 14 || i == 15) ticks += std::atof(f.c_str());  // utime, stime
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Raises the soft limit on open files to the hard one: N sockets here, N in the server.
void raise_file_limit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
  getrlimit(RLIMIT_NOFILE, &r);
  std::printf("open files limit: %llu\n", static_cast<unsigned long long>(r.rlim_cur));
}

template <typename Ready>
bool wait_until(double timeout_s, Ready ready) {
  const auto t0 = Clock::now();
  while (!ready()) {
    if (seconds_since(t0) > timeout_s) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

size_t listed_workers(const LocalCluster& c) {
  auto j = lizard::get_json(c, "/clients");
  return j.is_array() ? j.size() : 0;
}

// The bench's program, its version made unique to `n`, so that each
// registration is a new program.
std::string program_copy(const LocalCluster& c, int n) {
  const fs::path dir = fs::path(c.dir()) / ("program-" + std::to_string(n));
  fs::create_directories(dir);
  for (const char* f : {"host.cpp", "kernel.cu", "config.yaml"})
    fs::copy_file(fs::path(LIZARD_BENCH_DIR "/many_workers/program") / f, dir / f,
                  fs::copy_options::overwrite_existing);
  std::ifstream in(dir / "config.yaml");
  std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string from = "version: \"1\"";
  config.replace(config.find(from), from.size(), "version: \"n" + std::to_string(n) + "\"");
  std::ofstream(dir / "config.yaml") << config;
  return dir.string();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Row {
  int workers = 0, agg_kb = 0;
  double iter_ms = 0, fold_ms = 0, wall_iter_ms = 0;
  double server_cpu_ms_per_iter = 0;  // the whole run's server CPU time / iterations
  double bytes_out_per_iter = 0, bytes_in_per_iter = 0;  // as the server sees them
  int64_t senders = 0;  // workers whose results reached the server (all, without a tree)
};

// One run over all N workers with `agg_kb` KiB aggregates; false on failure.
bool measure_run(const LocalCluster& c, lizard::FakeFleet& fleet, const std::string& hash, int n,
                 int agg_kb, int iters, Row* row) {
  const int floats = agg_kb * 1024 / 4;
  std::vector<float> ones(static_cast<size_t>(floats), 1.0f);
  fleet.set_aggregate(std::string(reinterpret_cast<const char*>(ones.data()), ones.size() * 4));
  const nlohmann::json body = {
      {"params", {{"iterations", iters}, {"agg_floats", floats}}},
      {"dataset", {{"x", {{"values", std::vector<float>(static_cast<size_t>(n) * 4, 1.0f)}}}}},
      {"max_iterations", iters},
      {"executors", n}};
  const lizard::FleetCounters before = fleet.counters();
  const double cpu0 = cpu_seconds(c.server_pid());
  const auto t0 = Clock::now();
  auto r = c.post("/runtime/" + hash + "?wait=1", body.dump());
  const double wall_s = seconds_since(t0);
  const double cpu_s = cpu_seconds(c.server_pid()) - cpu0;
  const lizard::FleetCounters after = fleet.counters();
  if (!r.ok() || r->status != 200) {
    std::fprintf(stderr, "run failed: %s\n",
                 r.ok() ? r->body.c_str() : r.status().message().c_str());
    return false;
  }
  auto rec = nlohmann::json::parse(r->body);
  if (rec["status"] != "done") {
    std::fprintf(stderr, "run did not finish: %.2000s\n", r->body.c_str());
    return false;
  }
  row->senders = rec["phases"].value("fold_tree_senders", static_cast<int64_t>(n));
  const float expect = static_cast<float>(n);
  const auto& total = rec["result"]["aggregate"]["total"];
  if (!total.is_array() || total.empty() || total[0].get<float>() != expect)
    std::fprintf(stderr, "warning: aggregate total[0] is %s, expected %g\n",
                 total.dump().substr(0, 40).c_str(), expect);
  std::vector<double> ms, fold;
  for (const auto& t : rec["timings"]) {
    ms.push_back(t["ms"].get<double>());
    fold.push_back(t["fold_ms"].get<double>());
  }
  const double its = static_cast<double>(std::max<size_t>(ms.size(), 1));
  row->workers = n;
  row->agg_kb = agg_kb;
  row->iter_ms = median(ms);
  row->fold_ms = median(fold);
  row->server_cpu_ms_per_iter = cpu_s * 1e3 / its;
  row->wall_iter_ms = rec.value("elapsed_ms", wall_s * 1e3) / its;
  row->bytes_out_per_iter = static_cast<double>(after.iterate_bytes - before.iterate_bytes) / its;
  row->bytes_in_per_iter = static_cast<double>(after.result_bytes - before.result_bytes) / its;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse_flags(argc, argv);
  raise_file_limit();
  nlohmann::json results = nlohmann::json::array();
  std::printf("fan-in %d, %d worker(s) per host\n", opt.fan_in, opt.workers_per_host);
  std::printf("%6s %6s %10s %9s %10s %10s %12s %12s %8s %10s %8s %8s\n", "N", "agg_KB", "iter_ms",
              "fold_ms", "wall_ms/it", "cpu_ms/it", "srv_out_B/it", "srv_in_B/it", "senders",
              "KiB/worker", "join_s", "reg_s");
  for (int n : opt.workers) {
    LocalCluster cluster;
    if (auto st = cluster.start(0, {}, {"--fold-fan-in", std::to_string(opt.fan_in)}); !st.ok()) {
      std::fprintf(stderr, "%s\n", st.message().c_str());
      return 1;
    }
    const uint64_t rss0 = rss_bytes(cluster.server_pid());
    lizard::FakeFleet fleet("127.0.0.1", cluster.port(), opt.io_threads,
                            {opt.fan_in >= 2, opt.workers_per_host});
    const auto t_join = Clock::now();
    fleet.connect(n);
    if (!wait_until(60, [&] { return listed_workers(cluster) >= static_cast<size_t>(n); })) {
      std::fprintf(stderr, "N=%d: only %zu workers joined within 60 s (%llu failures)\n", n,
                   listed_workers(cluster),
                   static_cast<unsigned long long>(fleet.counters().failures));
      return 1;
    }
    const double join_s = seconds_since(t_join);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the allocations settle
    const uint64_t rss1 = rss_bytes(cluster.server_pid());
    const double kib_per_worker =
        (static_cast<double>(rss1) - static_cast<double>(rss0)) / 1024 / n;

    const std::string dir = program_copy(cluster, n);
    const auto t_reg = Clock::now();
    auto loaded = cluster.load_program(dir);
    const std::string hash = lizard::printed_checksum(loaded);
    if (hash.empty()) {
      std::fprintf(stderr, "load_program failed: %s\n", loaded.output.c_str());
      return 1;
    }
    if (!wait_until(60, [&] { return fleet.counters().programs >= static_cast<uint64_t>(n); })) {
      std::fprintf(stderr, "N=%d: the program reached only %llu workers\n", n,
                   static_cast<unsigned long long>(fleet.counters().programs));
      return 1;
    }
    const double reg_s = seconds_since(t_reg);

    nlohmann::json entry = {{"workers", n},
                            {"join_s", join_s},
                            {"registration_s", reg_s},
                            {"server_rss_before", rss0},
                            {"server_rss_joined", rss1},
                            {"server_kib_per_worker", kib_per_worker},
                            {"runs", nlohmann::json::array()}};
    for (int kb : opt.agg_kb) {
      if (static_cast<double>(n) * kb / 1024 > opt.max_agg_mb) {
        std::printf("%6d %6d   skipped: %d x %d KiB per iteration is over --max-agg-mb=%g\n", n, kb,
                    n, kb, opt.max_agg_mb);
        continue;
      }
      Row row;
      if (!measure_run(cluster, fleet, hash, n, kb, opt.iters, &row)) return 1;
      std::printf("%6d %6d %10.3f %9.3f %10.3f %10.3f %12.0f %12.0f %8lld %10.1f %8.3f %8.3f\n", n,
                  kb, row.iter_ms, row.fold_ms, row.wall_iter_ms, row.server_cpu_ms_per_iter,
                  row.bytes_out_per_iter, row.bytes_in_per_iter,
                  static_cast<long long>(row.senders), kib_per_worker, join_s, reg_s);
      std::fflush(stdout);
      entry["runs"].push_back({{"agg_kb", kb},
                               {"iteration_ms_median", row.iter_ms},
                               {"fold_ms_median", row.fold_ms},
                               {"wall_ms_per_iteration", row.wall_iter_ms},
                               {"server_cpu_ms_per_iteration", row.server_cpu_ms_per_iter},
                               {"server_bytes_out_per_iteration", row.bytes_out_per_iter},
                               {"server_bytes_in_per_iteration", row.bytes_in_per_iter},
                               {"senders", row.senders}});
    }
    results.push_back(entry);
  }
  const nlohmann::json doc = {{"bench", "many_workers"},
                              {"iterations", opt.iters},
                              {"io_threads", opt.io_threads},
                              {"fold_fan_in", opt.fan_in},
                              {"workers_per_host", opt.workers_per_host},
                              {"hardware_threads", std::thread::hardware_concurrency()},
                              {"results", results}};
  fs::create_directories(opt.out);
  const std::string path = (fs::path(opt.out) / "many_workers.json").string();
  std::ofstream(path) << doc.dump(2) << "\n";
  std::printf("wrote %s\n", path.c_str());
  return 0;
}
