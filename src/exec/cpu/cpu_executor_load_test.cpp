// The loading of a CPU kernel library, whose static initialisers are the
// program's: bounded by the compile time-out, after which the executor says
// it is lost (its process is replaced, as the executor host's is).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "exec/cpu/cpu_executor.h"
#include "exec/cpu/kernel_source.h"
#include "exec/host_compiler.h"
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

// Builds the spinning program on an executor whose deadline is 2 s; what
// went wrong, or "" when the build failed as it should.  The stuck load holds
// the dynamic loader until the process ends, and even its exit waits for it:
// it runs in a process of its own that ends with _Exit.
std::string stuck_load_mistake() {
  const std::string cache = testing::TempDir() + "lizard-cpu-executor-load-test";
  const ProgramImage spinning = make_program(
      std::string("static int spin() { for (volatile long i = 0;; i = i + 1) {} return 0; }\n"
                  "static int never = spin();\n") +
      kKernel);
  // Compiled ahead, without a short deadline, into the cache the executor
  // reads: its build then only loads the library.
  auto plan = plan_cpu_build(spinning);
  if (!plan.ok()) return plan.status().message();
  auto compiled =
      HostCompiler(cache).build_shared(plan->files, plan->units, plan->flags, nullptr, &plan->pch);
  if (!compiled.ok()) return compiled.status().message();

  CpuExecutorOptions o;
  o.threads = 1;
  o.cache_dir = cache;
  o.compile_timeout_s = 2;
  auto e = make_cpu_executor(o);
  const auto start = std::chrono::steady_clock::now();
  Status st = e->build(spinning);
  const auto took = std::chrono::steady_clock::now() - start;
  if (st.code() != Code::kCompileError ||
      st.message().rfind("kernel.cu: the program's static initialisation did not finish within 2 s",
                         0) != 0)
    return "the build answered: " + st.message();
  if (!e->lost()) return "the executor is not lost";
  if (took < std::chrono::milliseconds(1900) || took > std::chrono::seconds(30))
    return "the build took " + std::to_string(took.count()) + " ns";
  // Nothing more is loaded here.
  Status next = e->build(make_program(std::string("// another\n") + kKernel));
  if (next.code() != Code::kUnavailable) return "the next build answered: " + next.message();
  return "";
}

TEST(CpuExecutorLoad, AStaticInitialiserThatNeverReturnsFailsTheBuildAtTheDeadline) {
  EXPECT_EXIT(
      {
        const std::string mistake = stuck_load_mistake();
        std::fputs(mistake.c_str(), stderr);
        std::_Exit(mistake.empty() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace lizard
