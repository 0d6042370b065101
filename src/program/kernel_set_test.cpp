#include "program/kernel_set.h"

#include <gtest/gtest.h>

namespace lizard {
namespace {

TEST(DemoteKernels, OnlyTheNamedKernelsLoseGlobalAndEveryOffsetStays) {
  const std::string src =
      "#include \"lizard_program.h\"\n"
      "extern \"C\" __global__ void blobs(int* x) { *x = 1; }\n"
      "extern \"C\" __global__ void assign(int* x) { *x = 2; }\n";
  const std::string out = demote_kernels(src, {"blobs"});
  EXPECT_EQ(out,
            "#include \"lizard_program.h\"\n"
            "extern \"C\" __device__ void blobs(int* x) { *x = 1; }\n"
            "extern \"C\" __global__ void assign(int* x) { *x = 2; }\n");
  EXPECT_EQ(out.size(), src.size());
  EXPECT_EQ(demote_kernels(src, {}), src);
  EXPECT_EQ(demote_kernels(src, {"other"}), src);
}

TEST(DemoteKernels, FindsTheNameBehindAttributesTemplatesAndDeclarations) {
  const std::string src =
      "template <int N> __global__ void __launch_bounds__(128, 2) tiled(float* x);\n"
      "extern \"C\" __global__ __attribute__((used)) void\n"
      "    gen(const float* __restrict__ a) {}\n"
      "extern \"C\" {\n"
      "__global__ void step(int* x);\n"
      "__global__ void step(int* x) {}\n"
      "}\n";
  const std::string out = demote_kernels(src, {"tiled", "gen", "step"});
  EXPECT_EQ(out.find("__global__"), std::string::npos) << out;
  EXPECT_EQ(out.size(), src.size());
  // Only `gen`: the others keep theirs.
  const std::string only_gen = demote_kernels(src, {"gen"});
  EXPECT_NE(only_gen.find("__device__ __attribute__((used)) void\n    gen("), std::string::npos);
  EXPECT_NE(only_gen.find("__global__ void step(int* x) {}"), std::string::npos);
}

TEST(DemoteKernels, CommentsLiteralsAndMacrosAreNotCode) {
  const std::string src =
      "// __global__ void blobs() in a comment\n"
      "/* __global__ void blobs() */\n"
      "#define KERNEL __global__ void blobs_macro()\n"
      "#define LONG \\\n"
      "   __global__ void blobs()\n"
      "const char* s = \"__global__ void blobs()\";\n"
      "const char* r = R\"x(__global__ void blobs())x\";\n"
      "int n = 1'000; char q = '\"';\n"
      "extern \"C\" __global__ void blobs() {}\n";
  const std::string out = demote_kernels(src, {"blobs", "blobs_macro"});
  // Only the last line's __global__ is code.
  EXPECT_EQ(out.substr(0, out.rfind('\n', out.size() - 2)),
            src.substr(0, src.rfind('\n', src.size() - 2)));
  EXPECT_NE(out.find("extern \"C\" __device__ void blobs() {}"), std::string::npos) << out;
}

TEST(GlobalFunctions, NamesEveryKernelOfTheSourceAndTheFirstTheManifestMisses) {
  const std::string src =
      "// __global__ void commented()\n"
      "extern \"C\" __global__ void gradient(int* x) {}\n"
      "template <int N> __global__ void __launch_bounds__(64) tiled(int* x) {}\n";
  EXPECT_EQ(global_functions(src), (std::set<std::string>{"gradient", "tiled"}));
  auto m = parse_manifest(
      "sources: {cuda: kernel.cu}\ndataset: {x: {type: float32, shape: [rows]}}\n"
      "iterate: [{kernel: gradiant}]\n",
      "config.yaml");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(missing_kernel_note(*m, src),
            "kernel 'gradiant' named in iterate is not a __global__ function of kernel.cu (its "
            "kernels: gradient, tiled); a kernel lizard launches is declared extern \"C\" "
            "__global__");
  EXPECT_EQ(missing_kernel_note(*m, "extern \"C\" __global__ void gradiant() {}"), "");
}

TEST(DemoteKernels, AnIdentifierThatOnlyContainsGlobalIsLeftAlone) {
  const std::string src = "int my__global__ = 0; __global__ void k() {}\n";
  EXPECT_EQ(demote_kernels(src, {"k"}), "int my__global__ = 0; __device__ void k() {}\n");
}

}  // namespace
}  // namespace lizard
