// The loading of a CPU kernel library, whose static initialisers are the
// program's: bounded by the compile time-out, after which the executor says
// it is lost (its process is replaced).
#include <gtest/gtest.h>

#include <chrono>

#include "exec/cpu/cpu_executor.h"
#include "program/codegen.h"

namespace lizard {
namespace {

const char* kYaml = R"(
sources: {cuda: kernel.cu}
dataset: {v: {type: int32, shape: [rows]}}
iterate: [{kernel: k, block: 64}]
)";

ProgramImage make_program(const std::string& kernel) {
  auto m = parse_manifest(kYaml, "config.yaml");
  EXPECT_TRUE(m.ok()) << m.status().message();
  ProgramImage p;
  p.manifest = *m;
  p.header = generate_program_header(*m);
  p.sources["kernel.cu"] = kernel;
  p.hash = std::to_string(std::hash<std::string>()(kernel));
  return p;
}

const char* kKernel =
    "extern \"C\" __global__ void k(global_params_t, dataset_t, global_state_t, agg_res_t) {}\n";

TEST(CpuExecutorLoad, AStaticInitialiserThatNeverReturnsFailsTheBuildAtTheDeadline) {
  CpuExecutorOptions o;
  o.threads = 1;
  o.cache_dir = testing::TempDir() + "lizard-cpu-executor-load-test";
  o.compile_timeout_s = 2;
  auto e = make_cpu_executor(o);
  ASSERT_TRUE(e->build(make_program(kKernel)).ok());  // compiled, and the runtime warm
  const auto start = std::chrono::steady_clock::now();
  Status st = e->build(make_program(
      std::string("static int spin() { for (volatile long i = 0;; i = i + 1) {} return 0; }\n"
                  "static int never = spin();\n") +
      kKernel));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(st.code(), Code::kCompileError) << st.message();
  EXPECT_EQ(st.message().rfind(
                "kernel.cu: the program's static initialisation did not finish within 2 s", 0),
            0u)
      << st.message();
  EXPECT_TRUE(e->lost());
  EXPECT_LT(took, std::chrono::seconds(30));
  // The stuck load holds the dynamic loader: nothing more is loaded here.
  Status next = e->build(make_program(std::string("// another\n") + kKernel));
  EXPECT_EQ(next.code(), Code::kUnavailable) << next.message();
}

}  // namespace
}  // namespace lizard
