// bench/data_load: how fast a run's dataset reaches its workers.  A 1 GiB
// .npy file (float32) is loaded by 2 local CPU workers
//   (a) from a path both can read (page cache warm): time from run start to
//       the first iteration, as the server records it;
//   (b) uploaded with POST /datasets (streamed from the file, as `curl -T`
//       does) and streamed by the server to the workers: upload time + load
//       time.
//
//   data_load [--mib=1024]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "dataset/npy.h"
#include "local_cluster.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Load time of a finished run: its whole time less its iterations.
double load_seconds(const nlohmann::json& rec) {
  double ms = rec["elapsed_ms"].get<double>();
  for (const auto& t : rec["timings"]) ms -= t["ms"].get<double>();
  return ms / 1000.0;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t mib = 1024;
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--mib=", 6) == 0) mib = std::stoll(argv[i] + 6);
  const int64_t rows = mib * (1 << 20) / 4;
  const double gb = rows * 4 / 1e9;

  lizard::LocalCluster cluster;
  if (auto st = cluster.start(2); !st.ok())
    return std::fprintf(stderr, "%s\n", st.message().c_str()), 1;
  auto loaded = cluster.load_program(LIZARD_BENCH_DIR "/iteration_overhead/program");
  if (loaded.exit_code != 0)
    return std::fprintf(stderr, "load_program: %s\n", loaded.output.c_str()), 1;
  const std::string hash = lizard::printed_checksum(loaded);

  const std::string path = cluster.dir() + "/data.npy";
  {
    std::vector<float> chunk(1 << 20, 1.0f);
    std::ofstream out(path, std::ios::binary);
    out << lizard::npy_header(lizard::DType::kFloat32, {rows});
    for (int64_t done = 0; done < rows; done += static_cast<int64_t>(chunk.size()))
      out.write(reinterpret_cast<const char*>(chunk.data()),
                static_cast<std::streamsize>(std::min<int64_t>(chunk.size(), rows - done) * 4));
  }
  {
    std::ifstream in(path, std::ios::binary);  // warms the page cache
    std::vector<char> block(size_t{1} << 20);
    while (in.read(block.data(), static_cast<std::streamsize>(block.size()))) {
    }
  }
  auto run = [&](const nlohmann::json& source) {
    nlohmann::json body = {{"params", {{"iterations", 1}}}, {"dataset", {{"x", source}}}};
    auto r = cluster.post("/runtime/" + hash + "?wait=1", body.dump());
    auto rec = r.ok() ? nlohmann::json::parse(r->body, nullptr, false) : nlohmann::json();
    if (!rec.is_object() || rec.value("status", "") != "done") {
      std::fprintf(stderr, "run failed: %s\n",
                   r.ok() ? r->body.c_str() : r.status().message().c_str());
      std::exit(1);
    }
    return rec;
  };

  std::printf("data_load: %.2f GB float32 (%lld rows), 2 CPU workers on 127.0.0.1\n", gb,
              static_cast<long long>(rows));
  for (int rep = 0; rep < 3; ++rep) {
    const double s = load_seconds(run({{"path", path}}));
    std::printf("  path:   run start to first iteration %.3f s = %.2f GB/s   (target >= 1 GB/s)\n",
                s, gb / s);
  }
  for (int rep = 0; rep < 4; ++rep) {
    auto t0 = Clock::now();
    auto up = lizard::http_upload_file("POST", cluster.uri() + "/datasets", path);
    if (!up.ok() || up->status != 201) return std::fprintf(stderr, "upload failed\n"), 1;
    const double upload = seconds_since(t0);
    const std::string id = nlohmann::json::parse(up->body)["id"];
    const double load = load_seconds(run({{"upload", id}}));
    std::printf(
        "  upload: POST %.3f s + load %.3f s = %.2f GB/s end to end   (target >= 0.3 GB/s)\n",
        upload, load, gb / (upload + load));
    lizard::http_request("DELETE", cluster.uri() + "/datasets/" + id, "", "", 60);
  }
  return 0;
}
