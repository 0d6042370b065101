// End to end: a real server and two real workers on 127.0.0.1 run the
// examples, and bad input is answered with clear errors while the daemons stay up.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "dataset/npy.h"
#include "shared_cluster.h"

namespace lizard {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

class EndToEnd : public SharedClusterTest {};

// Lloyd's algorithm as the kmeans example defines it: float32 distances,
// means of the assigned points, empty clusters stay, done after max_iter
// updates or when no centroid moved more than threshold.
std::vector<float> reference_kmeans(const std::vector<float>& pts, int dims, std::vector<float> c,
                                    int max_iter, float threshold, int* iterations) {
  const size_t n = pts.size() / dims, k = c.size() / dims;
  for (int it = 0; it < max_iter; ++it) {
    std::vector<double> sums(k * dims, 0);
    std::vector<int64_t> counts(k, 0);
    for (size_t i = 0; i < n; ++i) {
      size_t best = 0;
      float best_d = 3.402823466e38f;
      for (size_t q = 0; q < k; ++q) {
        float d = 0;
        for (int j = 0; j < dims; ++j) {
          float diff = pts[i * dims + j] - c[q * dims + j];
          d += diff * diff;
        }
        if (d < best_d) best_d = d, best = q;
      }
      counts[best]++;
      for (int j = 0; j < dims; ++j) sums[best * dims + j] += pts[i * dims + j];
    }
    float max_shift = 0;
    for (size_t q = 0; q < k; ++q) {
      if (!counts[q]) continue;
      double moved = 0;
      for (int j = 0; j < dims; ++j) {
        float mean = static_cast<float>(sums[q * dims + j] / counts[q]);
        moved += double(mean - c[q * dims + j]) * (mean - c[q * dims + j]);
        c[q * dims + j] = mean;
      }
      max_shift = std::max(max_shift, static_cast<float>(std::sqrt(moved)));
    }
    *iterations = it + 1;
    if (max_shift <= threshold) break;
  }
  return c;
}

std::vector<float> flat_floats(const json& nested) {
  std::vector<float> out;
  for (const auto& row : nested)
    for (const auto& v : row) out.push_back(v.get<float>());
  return out;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rel) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], rel * std::max(1.0, std::fabs(double(want[i]))))
        << "element " << i;
}

TEST_F(EndToEnd, KmeansFindsKnownBlobCentres) {
  const std::string hash = register_program(LIZARD_SOURCE_DIR "/examples/kmeans");
  ASSERT_EQ(hash.size(), 64u);
  const int dims = 4, k = 3, per = 4000;
  const float centres[k][dims] = {{-5, -5, 0, 1}, {5, 5, 0, -1}, {0, 8, -8, 3}};
  std::mt19937 rng(42);
  std::normal_distribution<float> noise(0.f, 0.5f);
  std::vector<float> pts;
  for (int i = 0; i < per * k; ++i)
    for (int j = 0; j < dims; ++j) pts.push_back(centres[i % k][j] + noise(rng));
  const std::string path = cluster_->dir() + "/blobs.npy";
  std::ofstream(path, std::ios::binary) << npy_bytes(DType::kFloat32, {per * k, dims}, pts.data());
  std::vector<float> init(pts.begin(), pts.begin() + k * dims);  // one point of each blob
  json body = {{"params", {{"k", k}, {"dims", dims}, {"max_iterations", 20}, {"threshold", 1e-3}}},
               {"dataset", {{"points", {{"path", path}}}}},
               {"state", {{"centroids", init}}}};
  json rec = run(hash, body);
  ASSERT_EQ(rec["status"], "done") << rec.dump(2);
  int ref_iters = 0;
  auto want = reference_kmeans(pts, dims, init, 20, 1e-3f, &ref_iters);
  auto got = flat_floats(rec["result"]["state"]["centroids"]);
  expect_close(got, want, 1e-4);
  for (int c = 0; c < k; ++c)
    for (int j = 0; j < dims; ++j) EXPECT_NEAR(got[c * dims + j], centres[c][j], 0.05);
  EXPECT_EQ(rec["iterations"], ref_iters);
  EXPECT_EQ(plan_workers(rec).size(), 2u);  // both workers took part, with every executor
  ASSERT_EQ(rec["plan"]["executors"].size(), executor_count(*cluster_));
  EXPECT_EQ(rec["result"]["aggregate"]["counts"], json({per, per, per}));

  // The labels output comes back in row order as .npy.
  auto labels =
      cluster_->get("/runtimes/" + rec["runtime_id"].get<std::string>() + "/fields/labels.npy");
  ASSERT_TRUE(labels.ok());
  ASSERT_EQ(labels->status, 200);
  auto hl = npy_header_length(labels->body);
  ASSERT_TRUE(hl.ok());
  const int32_t* l = reinterpret_cast<const int32_t*>(labels->body.data() + hl.value());
  ASSERT_EQ(labels->body.size() - hl.value(), size_t(per * k) * 4);
  for (int i = 0; i < per * k; ++i) ASSERT_EQ(l[i], i % k) << "row " << i;
}

TEST_F(EndToEnd, KmeansOnSeedDataMatchesReference) {
  const std::string hash = register_program(LIZARD_SOURCE_DIR "/examples/kmeans");
  std::ifstream in(LIZARD_TEST_DATA_DIR "/lizard-kmeans-n2048-d16.txt");
  int64_t n = 0;
  in >> n;
  std::vector<float> pts;
  for (int64_t i = 0; i < n; ++i) {
    double idx, v;
    in >> idx;
    for (int j = 0; j < 16; ++j) in >> v, pts.push_back(static_cast<float>(v));
  }
  ASSERT_EQ(n, 2048);
  const int k = 8;
  std::vector<float> init(pts.begin(), pts.begin() + k * 16);
  json body = {
      {"params", {{"k", k}, {"dims", 16}, {"max_iterations", 15}, {"threshold", 1e-5}}},
      {"dataset",
       {{"points",
         {{"path", LIZARD_TEST_DATA_DIR "/lizard-kmeans-n2048-d16.txt"}, {"format", "lizard"}}}}},
      {"state", {{"centroids", init}}}};
  json rec = run(hash, body);
  ASSERT_EQ(rec["status"], "done") << rec.dump(2);
  int ref_iters = 0;
  auto want = reference_kmeans(pts, 16, init, 15, 1e-5f, &ref_iters);
  expect_close(flat_floats(rec["result"]["state"]["centroids"]), want, 1e-4);
  EXPECT_EQ(rec["iterations"], ref_iters);
}

TEST_F(EndToEnd, SumOfSeedCsvMatchesReference) {
  const std::string hash = register_program(LIZARD_SOURCE_DIR "/examples/sum");
  std::ifstream in(LIZARD_TEST_DATA_DIR "/lizard-demo-n2048-d8.csv");
  std::vector<double> want(8, 0);
  std::string line;
  int rows = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::stringstream s(line);
    std::string cell;
    for (int j = 0; std::getline(s, cell, ','); ++j) want[j] += std::stod(cell);
    ++rows;
  }
  json rec = run(
      hash,
      {{"params", {{"dims", 8}}},
       {"dataset", {{"values", {{"path", LIZARD_TEST_DATA_DIR "/lizard-demo-n2048-d8.csv"}}}}}});
  ASSERT_EQ(rec["status"], "done") << rec.dump(2);
  EXPECT_EQ(rec["result"]["aggregate"]["count"], rows);
  for (int j = 0; j < 8; ++j)
    EXPECT_NEAR(rec["result"]["aggregate"]["sums"][j].get<double>(), want[j],
                1e-9 * std::max(1.0, std::fabs(want[j])));
  // Inline values take the same path through the workers.
  json inline_rec = run(hash, {{"params", {{"dims", 2}}},
                               {"dataset", {{"values", {{"values", {{1, 2}, {3, 4}, {5, 6}}}}}}}});
  EXPECT_EQ(inline_rec["result"]["aggregate"]["sums"], json({9.0, 12.0}));
}

// ---- bad input -------------------------------------------------------------

void write_program(const fs::path& dir, const std::string& config, const std::string& kernel) {
  fs::create_directories(dir);
  std::ofstream(dir / "config.yaml") << config;
  if (!kernel.empty()) std::ofstream(dir / "kernel.cu") << kernel;
}

const char* kTinyKernel = R"(#include "lizard_program.h"
extern "C" __global__ void run(global_params_t p, dataset_t d, global_state_t s, agg_res_t r) {}
)";

TEST_F(EndToEnd, ManifestErrorsReachLoadProgramOutput) {
  struct Case {
    const char* name;
    std::string config;
    std::string expect;
  } cases[] = {
      {"unknown-type",
       "sources: {cuda: kernel.cu}\ndataset: {x: {type: float16, shape: [rows]}}\niterate: [run]\n",
       "dataset.x.type: unknown type 'float16'"},
      {"missing-param",
       "sources: {cuda: kernel.cu}\nstate: {c: {type: float32, shape: [k]}}\niterate: [run]\n",
       "state.c.shape[0]: 'k' is not a param"},
      {"no-kernel-source", "sources: {host: host.cpp}\niterate: [run]\n", "sources.cuda"},
      {"rows-outside-dataset",
       "sources: {cuda: kernel.cu}\nstate: {c: {type: float32, shape: [rows]}}\niterate: [run]\n",
       "`rows` is not allowed here"},
  };
  for (const auto& c : cases) {
    fs::path dir = fs::path(cluster_->dir()) / c.name;
    write_program(dir, c.config, kTinyKernel);
    CommandResult r = cluster_->load_program(dir.string());
    EXPECT_NE(r.exit_code, 0) << c.name;
    EXPECT_NE(r.output.find(c.expect), std::string::npos) << c.name << ": " << r.output;
  }
}

TEST_F(EndToEnd, CompilerLogReachesLoadProgramOutput) {
  fs::path dir = fs::path(cluster_->dir()) / "broken";
  write_program(
      dir,
      "sources: {cuda: kernel.cu}\ndataset: {x: {type: float32, shape: [rows]}}\niterate: [run]\n",
      "#include \"lizard_program.h\"\nextern \"C\" __global__ void run(global_params_t p, "
      "dataset_t d,"
      " global_state_t s, agg_res_t r) { this_is_not_declared = 1; }\n");
  CommandResult r = cluster_->load_program(dir.string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("this_is_not_declared"), std::string::npos) << r.output;
  // A kernel named in `iterate` but not defined is a build error too.
  fs::path dir2 = fs::path(cluster_->dir()) / "missing-kernel";
  write_program(dir2,
                "sources: {cuda: kernel.cu}\ndataset: {x: {type: float32, shape: "
                "[rows]}}\niterate: [absent]\n",
                kTinyKernel);
  CommandResult r2 = cluster_->load_program(dir2.string());
  EXPECT_NE(r2.exit_code, 0);
  EXPECT_NE(r2.output.find("absent"), std::string::npos) << r2.output;
}

// A specialised param: the workers compile the kernel for each run's value
// (the kernel needs it as a constant), and each run gets its value's answer.
TEST_F(EndToEnd, SpecialisedParamsCompilePerRunValue) {
  fs::path dir = fs::path(cluster_->dir()) / "specialised";
  write_program(dir,
                "sources: {cuda: kernel.cu}\n"
                "params: {dims: {type: int32, specialize: true, default: 2}}\n"
                "dataset: {x: {type: float32, shape: [rows, dims]}}\n"
                "aggregate: {sums: {type: float32, shape: [dims], reduce: sum}}\n"
                "iterate: [column_sums]\n",
                R"(#include "lizard_program.h"
template <int D> struct Row { float v[D]; };
static_assert(global_params_t::dims != 7, "dims 7 is refused");
extern "C" __global__ void column_sums(global_params_t p, dataset_t d, global_state_t s,
                                       agg_res_t r) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= d.rows) return;
  Row<p.dims> row;
  for (int j = 0; j < p.dims; ++j) row.v[j] = d.x[i * p.dims + j];
  for (int j = 0; j < p.dims; ++j) atomicAdd(&r.sums[j], row.v[j]);
}
)");
  const std::string hash = register_program(dir.string());
  for (int dims : {2, 3, 3}) {
    json rows = json::array();
    for (int i = 0; i < 10; ++i) {
      json row = json::array();
      for (int j = 0; j < dims; ++j) row.push_back(i + 100 * j);
      rows.push_back(row);
    }
    json rec = run(hash, {{"params", {{"dims", dims}}}, {"dataset", {{"x", {{"values", rows}}}}}});
    ASSERT_EQ(rec.value("status", ""), "done") << rec.dump();
    json want = json::array();
    for (int j = 0; j < dims; ++j) want.push_back(45 + 1000 * j);
    EXPECT_EQ(rec["result"]["aggregate"]["sums"], want) << dims;
  }
  // A value the kernel does not compile with fails that run with the compiler's message.
  json rows = json::array();
  for (int i = 0; i < 4; ++i) rows.push_back(json(std::vector<int>(7, i)));
  auto r = cluster_->post(
      "/runtime/" + hash + "?wait=1",
      json({{"params", {{"dims", 7}}}, {"dataset", {{"x", {{"values", rows}}}}}}).dump());
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r->body.find("dims 7 is refused"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("specialised params dims=7"), std::string::npos) << r->body;
}

TEST_F(EndToEnd, BadRequestsGetClearErrors) {
  const std::string hash = register_program(LIZARD_SOURCE_DIR "/examples/kmeans");
  auto expect_error = [&](const std::string& path, const std::string& body, int status,
                          const std::string& text) {
    auto r = cluster_->post(path, body);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->status, status) << path << " " << body << " -> " << r->body;
    auto j = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(j.is_object() && j.contains("error")) << r->body;
    EXPECT_NE(j["error"].get<std::string>().find(text), std::string::npos) << j["error"];
  };
  const std::string csv = LIZARD_TEST_DATA_DIR "/lizard-demo-n16-d3.csv";
  json points = {{"points", {{"path", csv}}}};
  expect_error("/programs", "{not json", 400, "not valid JSON");
  expect_error("/runtime/" + hash, "{not json", 400, "not valid JSON");
  expect_error("/runtime/0000", "{}", 404, "no such program");
  // kmeans' k and dims have defaults (they are specialised): sum's dims has none.
  const std::string sum = register_program(LIZARD_SOURCE_DIR "/examples/sum");
  expect_error("/runtime/" + sum, json({{"dataset", {{"values", {{"path", csv}}}}}}).dump(), 400,
               "missing param(s): dims");
  expect_error("/runtime/" + hash,
               json({{"params", {{"k", "two"}, {"dims", 3}}}, {"dataset", points}}).dump(), 400,
               "param 'k': expected a number (int32)");
  expect_error("/runtime/" + hash,
               json({{"params", {{"k", 2.5}, {"dims", 3}}}, {"dataset", points}}).dump(), 400,
               "expected an integer");
  expect_error("/runtime/" + hash,
               json({{"params", {{"k", 2}, {"dims", 3}, {"kk", 1}}}, {"dataset", points}}).dump(),
               400, "unknown param 'kk'");
  expect_error("/runtime/" + hash,
               json({{"params", {{"k", 2}, {"dims", 4}}}, {"dataset", points}}).dump(), 400,
               "line 1");
  expect_error("/runtime/" + hash,
               json({{"params", {{"k", 2}, {"dims", 3}}},
                     {"dataset", {{"points", {{"path", "/no/such/file.csv"}}}}}})
                   .dump(),
               400, "/no/such/file.csv");
  expect_error("/runtime/" + hash,
               json({{"params", {{"k", 2}, {"dims", 2}}},
                     {"dataset", {{"points", {{"values", {{1, 2}, {3}}}}}}}})
                   .dump(),
               400, "row 1");
  auto r = cluster_->get("/runtimes/r999999");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 404);
}

}  // namespace
}  // namespace lizard
