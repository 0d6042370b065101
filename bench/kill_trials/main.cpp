// bench/kill_trials: how often a run survives a kill -9 with the exact answer.
// A real server and 4 CPU workers on 127.0.0.1 run k-means over and over;
// during each run one process is killed with SIGKILL at a random moment —
// a random worker in the first trials, the server in the others (it is
// restarted at once on the same port and state directory) — and the run
// must end `done` with the answer of an undisturbed run, bit for bit.  The
// points have small integer coordinates, so that every partial sum is exact
// in float32 and any partition of the rows folds to the same bits: a
// difference is a recovery error, never rounding.
//
//   kill_trials [--worker-kills=50] [--server-kills=20] [--n=400000] [--iters=30] [--seed=S]
// prints   worker kills: N/50 exact
//          server kills: M/20 exact
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "dataset/npy.h"
#include "local_cluster.h"

namespace {

using lizard::LocalCluster;
using nlohmann::json;

std::string flag(int argc, char** argv, const std::string& name, const std::string& def) {
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], name.c_str(), name.size()) == 0 && argv[i][name.size()] == '=')
      return argv[i] + name.size() + 1;
  return def;
}

constexpr int kK = 8, kDims = 4, kWorkers = 4;

struct Trials {
  LocalCluster c;
  std::string hash, data;
  json body;
  std::mt19937 rng;
  std::vector<size_t> alive;

  std::string submit() {
    auto r = c.post("/runtime/" + hash, body.dump());
    if (!r.ok() || r->status != 202) return "";
    return json::parse(r->body).value("runtime_id", "");
  }

  std::string labels(const std::string& id) {
    auto r = c.get("/runtimes/" + id + "/fields/labels.npy");
    return r.ok() && r->status == 200 ? r->body : "";
  }

  // Keeps kWorkers workers running.
  bool top_up() {
    while (alive.size() < kWorkers) {
      if (!c.add_worker({"--cpu-threads", "1"}).ok()) return false;
      alive.push_back(c.worker_pids().size() - 1);
    }
    return c.wait_for_workers(kWorkers, 60).ok();
  }

  // One run with one kill at a random moment in [0, ms); true when it ends
  // done with the reference answer.
  bool trial(bool kill_server, double ms, const json& want, const std::string& want_labels) {
    const std::string id = submit();
    if (id.empty()) return false;
    const auto at = std::chrono::microseconds(
        std::uniform_int_distribution<int64_t>(0, static_cast<int64_t>(ms * 1000))(rng));
    std::this_thread::sleep_for(at);
    if (kill_server) {
      if (!c.restart_server().ok()) return false;
    } else {
      const size_t pick = std::uniform_int_distribution<size_t>(0, alive.size() - 1)(rng);
      c.kill_worker(alive[pick], SIGKILL);
      alive.erase(alive.begin() + static_cast<long>(pick));
    }
    json rec = lizard::wait_until_finished(c, id, 300);
    const bool exact =
        rec.value("status", "") == "done" && rec["result"] == want && labels(id) == want_labels;
    if (!exact)
      std::fprintf(stderr, "%s kill at %.0f ms: %s %s\n", kill_server ? "server" : "worker",
                   at.count() / 1000.0, rec.value("status", "?").c_str(),
                   rec.value("error", "").c_str());
    const bool topped_up = top_up();
    return exact && topped_up;
  }
};

}  // namespace

int main(int argc, char** argv) {
  const int worker_kills = std::stoi(flag(argc, argv, "--worker-kills", "50"));
  const int server_kills = std::stoi(flag(argc, argv, "--server-kills", "20"));
  const int64_t n = std::stoll(flag(argc, argv, "--n", "400000"));
  const int iters = std::stoi(flag(argc, argv, "--iters", "30"));
  Trials t;
  t.rng.seed(static_cast<unsigned>(std::stoul(flag(argc, argv, "--seed", "1"))));
  if (!t.c.start(kWorkers, {"--cpu-threads", "1"}).ok()) {
    std::fprintf(stderr, "cannot start the cluster (logs in %s)\n", t.c.dir().c_str());
    return 1;
  }
  for (size_t i = 0; i < kWorkers; ++i) t.alive.push_back(i);
  t.hash = lizard::register_program(t.c, LIZARD_BENCH_DIR "/../examples/kmeans");
  if (t.hash.empty()) return 1;
  std::vector<float> pts(static_cast<size_t>(n) * kDims);
  std::mt19937 data_rng(3);
  std::uniform_int_distribution<int> jitter(-2, 2);
  for (int64_t i = 0; i < n; ++i)
    for (int j = 0; j < kDims; ++j)
      pts[static_cast<size_t>(i * kDims + j)] =
          static_cast<float>(10 * ((i % kK >> j) & 1) + 3 * (i % kK) + jitter(data_rng));
  t.data = t.c.dir() + "/points.npy";
  std::FILE* f = std::fopen(t.data.c_str(), "wb");
  const std::string bytes = lizard::npy_bytes(lizard::DType::kFloat32, {n, kDims}, pts.data());
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  t.body = {{"params", {{"k", kK}, {"dims", kDims}, {"max_iterations", iters}, {"threshold", -1}}},
            {"dataset", {{"points", {{"path", t.data}}}}},
            {"state", {{"centroids", std::vector<float>(pts.begin(), pts.begin() + kK * kDims)}}}};

  const std::string ref_id = t.submit();
  json ref = lizard::wait_until_finished(t.c, ref_id, 300);
  if (ref.value("status", "") != "done") {
    std::fprintf(stderr, "the undisturbed run failed: %s\n", ref.dump(2).c_str());
    return 1;
  }
  const double ms = ref.value("elapsed_ms", 1000.0);
  const std::string ref_labels = t.labels(ref_id);
  std::printf("undisturbed run: %lld rows, %d iterations, %.0f ms\n", static_cast<long long>(n),
              iters, ms);
  int worker_exact = 0, server_exact = 0;
  for (int i = 0; i < worker_kills; ++i)
    worker_exact += t.trial(false, ms, ref["result"], ref_labels);
  std::printf("worker kills: %d/%d exact\n", worker_exact, worker_kills);
  std::fflush(stdout);
  for (int i = 0; i < server_kills; ++i)
    server_exact += t.trial(true, ms, ref["result"], ref_labels);
  std::printf("server kills: %d/%d exact\n", server_exact, server_kills);
  return worker_exact == worker_kills && server_exact == server_kills ? 0 : 2;
}
