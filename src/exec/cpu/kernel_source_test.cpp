#include "exec/cpu/kernel_source.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "program/codegen.h"

namespace lizard {
namespace {

TEST(KernelSource, StripKeepsCodeAndNewlines) {
  const std::string s =
      strip_comments_and_literals("a // __syncthreads\nb /* x\ny */ \"tex2D\" 'c'");
  EXPECT_EQ(s.find("__syncthreads"), std::string::npos);
  EXPECT_EQ(s.find("tex2D"), std::string::npos);
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 2);
  EXPECT_EQ(s[0], 'a');
  EXPECT_NE(s.find('b'), std::string::npos);
}

TEST(KernelSource, FibersOnlyForBarriersAndWarpCollectives) {
  EXPECT_FALSE(needs_fibers("int x = atomicAdd(p, 1);"));
  EXPECT_TRUE(needs_fibers("__syncthreads();"));
  EXPECT_TRUE(needs_fibers("v += __shfl_down_sync(0xffffffff, v, 1);"));
  EXPECT_TRUE(needs_fibers("unsigned b = __ballot_sync(m, x);"));
  EXPECT_TRUE(needs_fibers("__syncwarp();"));
}

TEST(KernelSource, NamesUnsupportedFeatures) {
  EXPECT_EQ(find_unsupported_feature("float x = a[i];"), "");
  EXPECT_NE(find_unsupported_feature("float v = tex2D<float>(t, x, y);").find("texture"),
            std::string::npos);
  EXPECT_NE(find_unsupported_feature("texture<float, 1> t;").find("texture"), std::string::npos);
  EXPECT_EQ(find_unsupported_feature("int texture = 1;"), "");
  EXPECT_NE(find_unsupported_feature("auto g = cooperative_groups::this_grid(); g.sync();")
                .find("cooperative groups"),
            std::string::npos);
  EXPECT_NE(find_unsupported_feature("child<<<1, 1>>>(x);").find("dynamic parallelism"),
            std::string::npos);
  EXPECT_NE(find_unsupported_feature("asm volatile(\"nop\");").find("asm"), std::string::npos);
}

TEST(KernelSource, RewritesExternSharedKeepingLines) {
  const std::string out =
      rewrite_extern_shared("x;\nextern __shared__ __align__(16)\n unsigned char smem[];\ny;");
  EXPECT_NE(out.find("static thread_local unsigned char* const smem = reinterpret_cast<unsigned "
                     "char*>(::lizard_cpu::dynamic_shared());"),
            std::string::npos)
      << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3);
  EXPECT_EQ(out.substr(out.size() - 2), "y;");
}

TEST(KernelSource, ExternSharedInAFunctionIsAPlainLocal) {
  const std::string out = rewrite_extern_shared(
      "namespace a { extern \"C\" {\n"
      "extern __shared__ float ns[];\n"
      "__global__ void k() { if (1) { extern __shared__ int fn[]; } }\n"
      "struct S { void f() { extern __shared__ double mem[]; } };\n"
      "} }\n"
      "extern __shared__ char top[]; // {\n");
  EXPECT_NE(out.find("static thread_local float* const ns = "), std::string::npos) << out;
  EXPECT_NE(
      out.find("{ int* const fn = reinterpret_cast<int*>(::lizard_cpu_thread.dynamic_shared);"),
      std::string::npos)
      << out;
  EXPECT_NE(out.find("{ double* const mem = "), std::string::npos) << out;
  EXPECT_NE(out.find("static thread_local char* const top = "), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 6);
}

TEST(KernelSource, PlanWritesEntryPointsAndFiberMode) {
  auto m = parse_manifest("sources: {cuda: kernel.cu}\niterate: [a, b, a]\n", "config.yaml");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ProgramImage p;
  p.manifest = *m;
  p.header = generate_program_header(*m);
  p.sources["kernel.cu"] = "// __syncthreads in a comment\n";
  auto plan = plan_cpu_build(p);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_FALSE(plan->fibers);
  const std::string& entry = plan->files.at("lizard_cpu_entry.cpp");
  // The fiber mode is set in the header the entry includes first, which is
  // precompiled.
  ASSERT_FALSE(plan->pch.header.empty());
  EXPECT_NE(plan->files.at(plan->pch.header).find("#define LIZARD_CPU_FIBERS 0"),
            std::string::npos);
  EXPECT_LT(entry.find("#include \"" + plan->pch.header + "\""),
            entry.find("#include \"lizard_program.h\""));
  EXPECT_NE(entry.find("int lizard_cpu_kernel_a("), std::string::npos);
  EXPECT_NE(entry.find("int lizard_cpu_kernel_b("), std::string::npos);
  EXPECT_EQ(entry.find("lizard_cpu_kernel_a(", entry.find("lizard_cpu_kernel_a(") + 1),
            std::string::npos);
  EXPECT_TRUE(plan->files.count("cuda_cpu.h"));
  EXPECT_TRUE(plan->files.count("lizard_program.h"));
}

// The CPU build of a one-kernel program with an empty kernel.
CpuBuildPlan empty_program_plan() {
  auto m = parse_manifest("sources: {cuda: kernel.cu}\niterate: [a]\n", "config.yaml");
  EXPECT_TRUE(m.ok());
  ProgramImage p;
  p.manifest = *m;
  p.header = generate_program_header(*m);
  p.sources["kernel.cu"] = "";
  auto plan = plan_cpu_build(p);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? *plan : CpuBuildPlan{};
}

// The files `from` reaches through quoted includes, itself included; those
// missing from the build are in `missing`.
std::set<std::string> files_reached(const CpuBuildPlan& plan, const std::string& from,
                                    std::set<std::string>* missing) {
  std::vector<std::string> todo{from};
  std::set<std::string> seen;
  const std::regex include(R"re(#include "([^"]+)")re");
  while (!todo.empty()) {
    const std::string name = todo.back();
    todo.pop_back();
    if (!seen.insert(name).second) continue;
    auto it = plan.files.find(name);
    if (it == plan.files.end()) {
      missing->insert(name);
      continue;
    }
    for (std::sregex_iterator i(it->second.begin(), it->second.end(), include), end; i != end; ++i)
      todo.push_back((*i)[1].str());
  }
  return seen;
}

// Every header the CPU backend's CUDA layer includes with quotes travels
// with the build, so kernels reach all of it through cuda_cpu.h.
TEST(KernelSource, TheBuildCarriesEveryPartOfTheCudaLayer) {
  const CpuBuildPlan plan = empty_program_plan();
  std::set<std::string> missing;
  const std::set<std::string> seen = files_reached(plan, "cuda_cpu.h", &missing);
  EXPECT_TRUE(missing.empty()) << *missing.begin() << " is included but not part of the build";
  EXPECT_GE(seen.size(), 9u);
  EXPECT_TRUE(seen.count("cuda_cpu_launch_abi.h"));
}

// The precompiled runtime is keyed by every file it reads: each file the
// header reaches through quoted includes is one of its inputs, so that a
// precompiled header is never read for other text (HostCompiler).
TEST(KernelSource, ThePrecompiledRuntimeNamesEveryFileItReads) {
  const CpuBuildPlan plan = empty_program_plan();
  ASSERT_FALSE(plan.pch.header.empty());
  std::set<std::string> missing;
  const std::set<std::string> seen = files_reached(plan, plan.pch.header, &missing);
  EXPECT_TRUE(missing.empty());
  const std::set<std::string> inputs(plan.pch.inputs.begin(), plan.pch.inputs.end());
  for (const std::string& name : seen)
    EXPECT_TRUE(inputs.count(name)) << name << " is read by the precompiled header, not keyed";
  EXPECT_GE(seen.size(), 10u);
}

}  // namespace
}  // namespace lizard
