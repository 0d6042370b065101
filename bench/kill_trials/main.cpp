// bench/kill_trials: how often a run survives a kill -9 with the exact answer.
// A real server and 4 CPU workers on 127.0.0.1 run programs over and over;
// during each run one process is killed with SIGKILL at a random moment —
// a random worker in the first trials (a fresh worker replaces it for the
// next), the server in the others (restarted at once on the same port and
// state directory) — and the run must end `done` with the answer of an
// undisturbed run, bit for bit: its result and a field.
//
// Worker kills run k-means, whose points have small integer coordinates, so
// that every partial sum is exact in float32 and any partition of the rows
// (the run is re-planned over 3 workers) folds to the same bits: a
// difference is a recovery error, never rounding.  Server kills alternate
// k-means (which starts over: its kernels keep per-row labels) and logistic
// regression (which resumes from its last checkpoint).
//
//   kill_trials [--worker-kills=50] [--server-kills=20] [--n=400000] [--iters=200] [--seed=S]
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

std::string write_npy(const LocalCluster& c, const std::string& name,
                      const std::vector<int64_t>& shape, const float* data) {
  const std::string path = c.dir() + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  const std::string bytes = lizard::npy_bytes(lizard::DType::kFloat32, shape, data);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  return path;
}

// A program, a run request, and what an undisturbed run of it gives.
struct Job {
  std::string name, hash, field;
  json body, result;
  std::string field_bytes;
  double ms = 0;
};

struct Trials {
  LocalCluster c;
  std::mt19937 rng;
  std::vector<size_t> alive;

  std::string submit(const Job& job) {
    auto r = c.post("/runtime/" + job.hash, job.body.dump());
    if (!r.ok() || r->status != 202) return "";
    return json::parse(r->body).value("runtime_id", "");
  }

  std::string field(const std::string& id, const std::string& name) {
    auto r = c.get("/runtimes/" + id + "/fields/" + name + ".npy");
    return r.ok() && r->status == 200 ? r->body : "";
  }

  // Runs the job undisturbed (twice: the second run, with the input files
  // in the page cache, gives the duration the kills are spread over) and
  // keeps its answer.
  bool reference(Job* job) {
    (void)lizard::wait_until_finished(c, submit(*job), 300);
    const std::string id = submit(*job);
    json rec = lizard::wait_until_finished(c, id, 300);
    if (rec.value("status", "") != "done") {
      std::fprintf(stderr, "the undisturbed %s run failed: %s\n", job->name.c_str(),
                   rec.dump(2).c_str());
      return false;
    }
    job->result = rec["result"];
    job->field_bytes = field(id, job->field);
    job->ms = rec.value("elapsed_ms", 1000.0);
    std::printf("undisturbed %s run: %lld rows, %lld iterations, %.0f ms\n", job->name.c_str(),
                static_cast<long long>(rec.value("rows", 0)),
                static_cast<long long>(rec.value("iterations", 0)), job->ms);
    return true;
  }

  std::vector<std::string> programs;

  // Keeps kWorkers workers running, each with the programs built.
  bool top_up() {
    while (alive.size() < kWorkers) {
      if (!c.add_worker({"--cpu-threads", "1"}).ok()) return false;
      alive.push_back(c.worker_pids().size() - 1);
    }
    if (!c.wait_for_workers(kWorkers, 60).ok()) return false;
    for (const auto& hash : programs)
      for (int i = 0;; ++i) {
        json builds = lizard::get_json(c, "/programs/" + hash).value("workers", json::object());
        int ready = 0;
        for (const auto& [_, state] : builds.items()) ready += state == "ready";
        if (ready >= kWorkers) break;
        if (i == 6000) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    return true;
  }

  int interrupted = 0;  // kills that came while the run was under way

  // One run with one kill at a random moment of it; true when it ends done
  // with the reference answer.
  bool trial(bool kill_server, const Job& job) {
    const std::string id = submit(job);
    if (id.empty()) return false;
    for (int i = 0; i < 2000; ++i) {  // a moment while it runs, loading included
      if (lizard::get_json(c, "/runtimes/" + id).value("status", "") != "queued") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    const auto at = std::chrono::microseconds(
        std::uniform_int_distribution<int64_t>(0, static_cast<int64_t>(job.ms * 900))(rng));
    std::this_thread::sleep_for(at);
    if (kill_server) {
      if (!c.restart_server().ok()) return false;
    } else {
      const size_t pick = std::uniform_int_distribution<size_t>(0, alive.size() - 1)(rng);
      c.kill_worker(alive[pick], SIGKILL);
      alive.erase(alive.begin() + static_cast<long>(pick));
    }
    json rec = lizard::wait_until_finished(c, id, 300);
    const bool exact = rec.value("status", "") == "done" && rec["result"] == job.result &&
                       field(id, job.field) == job.field_bytes;
    json resumed = rec.contains("recoveries") ? rec["recoveries"] : json::array();
    interrupted += !resumed.empty();
    std::fprintf(stderr, "%s kill at %.0f ms, %s: %s %s%s\n", kill_server ? "server" : "worker",
                 at.count() / 1000.0, job.name.c_str(), rec.value("status", "?").c_str(),
                 exact ? "exact" : "NOT EXACT", (" " + resumed.dump()).c_str());
    const bool topped_up = top_up();
    return exact && topped_up;
  }
};

}  // namespace

int main(int argc, char** argv) {
  const int worker_kills = std::stoi(flag(argc, argv, "--worker-kills", "50"));
  const int server_kills = std::stoi(flag(argc, argv, "--server-kills", "20"));
  const int64_t n = std::stoll(flag(argc, argv, "--n", "400000"));
  const int iters = std::stoi(flag(argc, argv, "--iters", "200"));
  Trials t;
  t.rng.seed(static_cast<unsigned>(std::stoul(flag(argc, argv, "--seed", "1"))));
  if (!t.c.start(kWorkers, {"--cpu-threads", "1"}).ok()) {
    std::fprintf(stderr, "cannot start the cluster (logs in %s)\n", t.c.dir().c_str());
    return 1;
  }
  for (size_t i = 0; i < kWorkers; ++i) t.alive.push_back(i);

  Job kmeans, logreg;
  kmeans.name = "k-means";
  kmeans.hash = lizard::register_program(t.c, LIZARD_BENCH_DIR "/../examples/kmeans");
  kmeans.field = "labels";
  logreg.name = "logreg";
  logreg.hash = lizard::register_program(t.c, LIZARD_BENCH_DIR "/../examples/logreg");
  logreg.field = "w";
  if (kmeans.hash.empty() || logreg.hash.empty()) return 1;
  t.programs = {kmeans.hash, logreg.hash};
  std::vector<float> pts(static_cast<size_t>(n) * kDims), y(static_cast<size_t>(n));
  std::mt19937 data_rng(3);
  std::uniform_int_distribution<int> jitter(-2, 2);
  for (int64_t i = 0; i < n; ++i) {
    float s = 0;
    for (int j = 0; j < kDims; ++j) {
      const float v =
          static_cast<float>(10 * ((i % kK >> j) & 1) + 3 * (i % kK) + jitter(data_rng));
      pts[static_cast<size_t>(i * kDims + j)] = v;
      s += (j % 2 ? 1.f : -1.f) * v;
    }
    y[static_cast<size_t>(i)] = s + static_cast<float>(jitter(data_rng)) > 0 ? 1.f : 0.f;
  }
  const std::string points = write_npy(t.c, "points.npy", {n, kDims}, pts.data());
  const std::string labels = write_npy(t.c, "y.npy", {n}, y.data());
  kmeans.body = {
      {"params", {{"k", kK}, {"dims", kDims}, {"max_iterations", iters}, {"threshold", -1}}},
      {"dataset", {{"points", {{"path", points}}}}},
      {"state", {{"centroids", std::vector<float>(pts.begin(), pts.begin() + kK * kDims)}}}};
  logreg.body = {
      {"params", {{"dims", kDims}, {"lr", 0.01}, {"tol", -1}, {"max_iterations", 2 * iters}}},
      {"dataset", {{"x", {{"path", points}}}, {"y", {{"path", labels}}}}}};
  if (!t.reference(&kmeans) || !t.reference(&logreg)) return 1;

  int worker_exact = 0, server_exact = 0;
  for (int i = 0; i < worker_kills; ++i) worker_exact += t.trial(false, kmeans);
  std::printf("worker kills: %d/%d exact\n", worker_exact, worker_kills);
  std::printf(
      "  (%d of them interrupted the run: the others came before it started or after "
      "it ended, or hit a worker it did not use)\n",
      t.interrupted);
  std::fflush(stdout);
  t.interrupted = 0;
  for (int i = 0; i < server_kills; ++i) server_exact += t.trial(true, i % 2 ? logreg : kmeans);
  std::printf("server kills: %d/%d exact\n", server_exact, server_kills);
  std::printf("  (%d of them interrupted the run)\n", t.interrupted);
  return worker_exact == worker_kills && server_exact == server_kills ? 0 : 2;
}
