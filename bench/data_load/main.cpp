// bench/data_load: how fast a run's dataset reaches the executors, beside
// what the machine allows.  On a float32 .npy file (page cache warm) it
// prints, in one run:
//   floors     reading the file into pinned memory on one thread and on
//              several; pinned and pageable host -> GPU copies (GPU machines);
//   stages     one executor's load, stage by stage: the worker's read into
//              memory, an executor copying rows it was given, rows sent to an
//              executor process over its channel, and an executor (in this
//              process, or in its own) reading the file itself;
//   lizard     through a real server and one worker (`lizard server`,
//              `lizard client`), with 1 executor and with 2 (2 GPUs where
//              present, else 2 CPU executors): the load time of a run (its
//              time less its iterations) by path, the file touched before
//              each run so that every one is a first load, and the run
//              after it over the same file; by upload, the first run over a
//              new upload and the run after it.
// The figures also go to data_load.json in --out=DIR, or in $OUT.
//
//   data_load [--mib=1024] [--reps=3] [--out=DIR]
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "dataset/npy.h"
#include "floors.h"
#include "local_cluster.h"

namespace {

using nlohmann::json;

// Load time of a finished run: its whole time less its iterations.
double load_seconds(const json& rec) {
  double ms = rec["elapsed_ms"].get<double>();
  for (const auto& t : rec["timings"]) ms -= t["ms"].get<double>();
  return ms / 1000.0;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A new modification time: the file is another version, loaded afresh.
void touch(const std::string& path) {
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
}

std::string write_npy(const std::string& path, int64_t rows) {
  std::vector<float> chunk(1 << 20, 1.0f);
  std::ofstream out(path, std::ios::binary);
  const std::string header = lizard::npy_header(lizard::DType::kFloat32, {rows});
  out << header;
  for (int64_t done = 0; done < rows; done += static_cast<int64_t>(chunk.size()))
    out.write(reinterpret_cast<const char*>(chunk.data()),
              static_cast<std::streamsize>(std::min<int64_t>(chunk.size(), rows - done) * 4));
  out.close();
  std::ifstream in(path, std::ios::binary);  // warms the page cache
  std::vector<char> block(size_t{1} << 20);
  while (in.read(block.data(), static_cast<std::streamsize>(block.size()))) {
  }
  return header;
}

struct Series {
  std::string name;
  std::vector<double> seconds;
};

// One worker with `executors` executors: the series of load times.
std::vector<Series> measure_lizard(const std::string& path, int executors, bool gpu, int reps,
                                   std::string* error) {
  std::vector<std::string> args;
  if (gpu)
    args = {"--backend", "cuda", "--gpus", executors == 1 ? "0" : "0,1"};
  else
    args = {"--backend", "cpu", "--cpu-executors", std::to_string(executors)};
  lizard::LocalCluster cluster;
  if (auto st = cluster.start(1, args); !st.ok()) {
    *error = st.message();
    return {};
  }
  auto loaded = cluster.load_program(LIZARD_BENCH_DIR "/iteration_overhead/program");
  if (loaded.exit_code != 0) {
    *error = "load_program: " + loaded.output;
    return {};
  }
  const std::string hash = lizard::printed_checksum(loaded);
  auto run = [&](const json& source) -> double {
    json body = {{"params", {{"iterations", 1}}}, {"dataset", {{"x", source}}}};
    auto r = cluster.post("/runtime/" + hash + "?wait=1", body.dump());
    auto rec = r.ok() ? json::parse(r->body, nullptr, false) : json();
    if (!rec.is_object() || rec.value("status", "") != "done") {
      *error = "run failed: " + (r.ok() ? r->body : r.status().message());
      return -1;
    }
    return load_seconds(rec);
  };
  Series path_first{"path_first", {}}, path_later{"path_later", {}}, up_first{"upload_first", {}},
      up_later{"upload_later", {}}, upload_post{"upload_post", {}};
  run({{"path", path}});  // compiles the program on every executor
  for (int rep = 0; rep < reps && error->empty(); ++rep) {
    touch(path);
    path_first.seconds.push_back(run({{"path", path}}));
    path_later.seconds.push_back(run({{"path", path}}));
  }
  for (int rep = 0; rep < reps && error->empty(); ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    auto up = lizard::http_upload_file("POST", cluster.uri() + "/datasets", path);
    if (!up.ok() || up->status != 201) {
      *error = "upload failed";
      return {};
    }
    upload_post.seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    const std::string id = json::parse(up->body)["id"];
    up_first.seconds.push_back(run({{"upload", id}}));
    up_later.seconds.push_back(run({{"upload", id}}));
    lizard::http_request("DELETE", cluster.uri() + "/datasets/" + id, "", "", 60);
  }
  return {path_first, path_later, up_first, up_later, upload_post};
}

std::string out_dir(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--out=", 6) == 0) return argv[i] + 6;
  const char* out = std::getenv("OUT");
  return out ? out : "";
}

}  // namespace

int main(int argc, char** argv) {
  int64_t mib = 1024;
  int reps = 3;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--mib=", 6) == 0) mib = std::stoll(argv[i] + 6);
    if (std::strncmp(argv[i], "--reps=", 7) == 0) reps = std::stoi(argv[i] + 7);
  }
  const int64_t rows = mib * (1 << 20) / 4;
  const double gb = rows * 4 / 1e9;
  char dir_template[] = "/tmp/lizard-data-load-XXXXXX";
  const char* dir = ::mkdtemp(dir_template);
  if (!dir) return std::perror("mkdtemp"), 1;
  const std::string path = std::string(dir) + "/data.npy";
  const std::string header = write_npy(path, rows);
  json result = {{"gb", gb}, {"rows", rows}};

  const bench::Floors floors = bench::measure_floors(path, header.size(), rows * 4);
  const bool gpu = floors.gpus > 0;
  result["floors"] = floors.to_json();
  std::printf("data_load: %.2f GB float32 (%lld rows), %s\n", gb, static_cast<long long>(rows),
              gpu ? "CUDA backend" : "CPU backend (no GPU)");
  std::printf("floors: read into %s memory %.2f GB/s (1 thread), %.2f GB/s (%d threads)\n",
              floors.pinned ? "pinned" : "plain", floors.read_one_thread_gbs,
              floors.read_threads_gbs, floors.threads);
  if (gpu)
    std::printf("floors: host -> GPU %.2f GB/s pinned, %.2f GB/s pageable\n", floors.h2d_pinned_gbs,
                floors.h2d_pageable_gbs);

  result["stages"] = bench::measure_stages(path, rows, gpu);
  std::printf("stages (GB/s): %s\n", result["stages"].dump().c_str());

  result["lizard"] = json::array();
  const int most = gpu ? std::min(floors.gpus, 2) : 2;
  for (int executors = 1; executors <= most; ++executors) {
    std::string error;
    auto series = measure_lizard(path, executors, gpu, reps, &error);
    if (!error.empty()) std::fprintf(stderr, "%d executor(s): %s\n", executors, error.c_str());
    for (const Series& s : series) {
      const double m = median(s.seconds);
      std::printf("lizard, %d executor(s), %-13s median %.3f s = %6.2f GB/s   (%zu runs)\n",
                  executors, s.name.c_str(), m, m > 0 ? gb / m : 0.0, s.seconds.size());
      result["lizard"].push_back({{"executors", executors},
                                  {"series", s.name},
                                  {"seconds", s.seconds},
                                  {"median_s", m},
                                  {"gbs", m > 0 ? gb / m : 0.0}});
    }
  }
  const std::string out = out_dir(argc, argv);
  if (!out.empty()) {
    std::ofstream(out + "/data_load.json") << result.dump(2) << "\n";
    std::printf("results: %s/data_load.json\n", out.c_str());
  }
  std::remove(path.c_str());
  ::rmdir(dir);
  return 0;
}
