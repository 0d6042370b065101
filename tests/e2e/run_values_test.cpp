// What a run's kernels and hooks see of it beyond its data: kernels read the
// iteration they run in data.iteration, and hooks read the run's seed and
// the iteration of their call in lizard_hook_context, whether the server
// drives the iterations or the run's one worker drives them itself.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "dataset/test_files.h"
#include "local_cluster.h"

namespace lizard {
namespace {

using nlohmann::json;

// Each iteration the kernel adds data.iteration once per row; the update
// hook records what the kernel saw (the sum over the rows), the iteration
// its context names, and the run's seed.
const char* kConfig = R"(info: {name: run values}
sources: {cuda: kernel.cu, host: host.cpp}
params: {max_iterations: {type: int32, default: 4}}
dataset: {x: {type: float32, shape: [rows]}}
state:
  kernel_saw: {type: int64, shape: [8]}
  hook_saw: {type: int64, shape: [8]}
  seed: {type: uint64}
aggregate:
  iteration_sum: {type: int64, reduce: sum}
  rows_seen: {type: int64, reduce: sum}
iterate: [count]
)";

const char* kKernel = R"(#include "lizard_program.h"
extern "C" __global__ void count(global_params_t params, dataset_t data, global_state_t state,
                                 agg_res_t result) {
  for (const long long row : lizard::rows(data)) {
    atomicAdd((unsigned long long*)result.iteration_sum, (unsigned long long)data.iteration);
    atomicAdd((unsigned long long*)result.rows_seen, 1ull);
  }
}
)";

const char* kHost = R"(#include "lizard_program.h"
extern "C" void init_global_state(const global_params_t*, global_state_t* s) {
  for (int i = 0; i < 8; ++i) s->kernel_saw[i] = s->hook_saw[i] = -1;
}
extern "C" int update_global_state(const global_params_t* p, const agg_res_t* r,
                                   global_state_t* s, int64_t iteration) {
  s->kernel_saw[iteration] = *r->iteration_sum / *r->rows_seen;
  s->hook_saw[iteration] = lizard_hook_context.iteration;
  s->seed = lizard_hook_context.run_seed;
  return iteration + 1 >= p->max_iterations;
}
)";

std::string write_program(const TempDir& dir) {
  const std::string path = dir.path("run_values");
  std::filesystem::create_directories(path);
  std::ofstream(path + "/config.yaml") << kConfig;
  std::ofstream(path + "/kernel.cu") << kKernel;
  std::ofstream(path + "/host.cpp") << kHost;
  return path;
}

json run(LocalCluster& c, const std::string& hash, const json& extra) {
  std::vector<float> x(1000, 1.0f);
  json body = {{"dataset", {{"x", {{"values", x}}}}}};
  body.update(extra);
  auto r = c.post("/runtime/" + hash + "?wait=1", body.dump());
  if (!r.ok()) return json();
  return json::parse(r->body, nullptr, false);
}

TEST(RunValues, KernelsSeeTheIterationAndHooksTheSeedInEitherLoop) {
  TempDir dir;
  const std::string program = write_program(dir);
  const json iterations = {0, 1, 2, 3, -1, -1, -1, -1};
  for (bool worker_loop : {true, false}) {
    SCOPED_TRACE(worker_loop ? "the worker drives the loop" : "the server drives the loop");
    LocalCluster c;
    std::vector<std::string> server_args = {"--run-timeout", "60"};
    if (!worker_loop) server_args.push_back("--no-worker-loop");
    ASSERT_TRUE(c.start(1, {}, server_args).ok());
    const std::string hash = register_program(c, program);
    json given = run(c, hash, {{"seed", 1234567890123ull}});
    ASSERT_EQ(given.value("status", ""), "done") << given.dump(2);
    EXPECT_EQ(given["phases"]["worker_loop"], worker_loop) << given["phases"].dump();
    EXPECT_EQ(given["iterations"], 4);
    EXPECT_EQ(given["result"]["state"]["kernel_saw"], iterations);
    EXPECT_EQ(given["result"]["state"]["hook_saw"], iterations);
    EXPECT_EQ(given["result"]["state"]["seed"], 1234567890123ull);
    json drawn = run(c, hash, json::object());  // a seed drawn at random, as the record says
    ASSERT_EQ(drawn.value("status", ""), "done") << drawn.dump(2);
    EXPECT_EQ(drawn["result"]["state"]["kernel_saw"], iterations);
    EXPECT_EQ(drawn["result"]["state"]["seed"], drawn["seed"]);
  }
}

}  // namespace
}  // namespace lizard
