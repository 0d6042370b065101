#include "exec/gpu_selection.h"

#include <gtest/gtest.h>

namespace lizard {
namespace {

// Four idle devices of equal weight that differ in free bytes only.
std::vector<ExecutorLoad> by_free_memory(const std::vector<uint64_t>& free) {
  std::vector<ExecutorLoad> out;
  for (uint64_t f : free) out.push_back({1.0, f, -1, -1});
  return out;
}
const std::vector<ExecutorLoad> kFourGpus = by_free_memory({10, 40, 20, 40});

std::vector<int> chosen(const std::string& text,
                        const std::vector<ExecutorLoad>& free = kFourGpus) {
  auto s = parse_gpu_selection(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status().message();
  if (!s.ok()) return {-1};
  auto g = choose_gpus(*s, free);
  EXPECT_TRUE(g.ok()) << text << ": " << g.status().message();
  return g.ok() ? *g : std::vector<int>{-1};
}

std::string parse_error(const std::string& text) {
  auto s = parse_gpu_selection(text);
  return s.ok() ? "ok" : s.status().message();
}

std::string choice_error(const std::string& text, const std::vector<ExecutorLoad>& free) {
  auto s = parse_gpu_selection(text);
  if (!s.ok()) return "parse: " + s.status().message();
  auto g = choose_gpus(*s, free);
  return g.ok() ? "ok" : g.status().message();
}

TEST(GpuSelection, IndicesSelectThoseDevicesAsCudaVisibleDevicesDoes) {
  EXPECT_EQ(chosen("0"), (std::vector<int>{0}));
  EXPECT_EQ(chosen("2"), (std::vector<int>{2}));
  EXPECT_EQ(chosen("0,2"), (std::vector<int>{0, 2}));
  EXPECT_EQ(chosen("3,1"), (std::vector<int>{3, 1}));
}

TEST(GpuSelection, AllNoneAndCounts) {
  EXPECT_EQ(chosen("all"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(chosen(""), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(chosen("all", {}), std::vector<int>{});
  EXPECT_EQ(chosen("none"), std::vector<int>{});
  EXPECT_EQ(chosen("count=1"), (std::vector<int>{0}));
  EXPECT_EQ(chosen("count=3"), (std::vector<int>{0, 1, 2}));
}

TEST(GpuSelection, MostFreeTakesTheDevicesWithTheMostFreeMemoryInIndexOrder) {
  EXPECT_EQ(chosen("auto:1"), (std::vector<int>{1}));  // 1 and 3 tie: the lower index
  EXPECT_EQ(chosen("auto:2"), (std::vector<int>{1, 3}));
  EXPECT_EQ(chosen("auto:3"), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(chosen("auto:4"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(chosen("auto:1", by_free_memory({5, 4, 3, 9})), (std::vector<int>{3}));
  // A GPU that another process keeps busy loses to an idle one with less free memory.
  std::vector<ExecutorLoad> busy = by_free_memory({10, 40});
  busy[1].utilization = 90;
  busy[0].utilization = 0;
  EXPECT_EQ(chosen("auto:1", busy), (std::vector<int>{0}));
}

TEST(GpuSelection, TextRoundTrips) {
  for (const char* text : {"all", "none", "0", "0,2", "3,1", "count=2", "auto:1"}) {
    auto s = parse_gpu_selection(text);
    ASSERT_TRUE(s.ok()) << text;
    EXPECT_EQ(gpu_selection_text(*s), text);
  }
  EXPECT_FALSE(parse_gpu_selection("none").value().needs_load());
  EXPECT_TRUE(parse_gpu_selection("auto:2").value().needs_load());
}

TEST(GpuSelection, MalformedTextSaysWhatIsAccepted) {
  const std::string forms = "expected all, none, indices such as 0 or 0,2, count=N, or auto:N";
  EXPECT_EQ(parse_error("two"), "--gpus 'two': " + forms);
  EXPECT_EQ(parse_error("-1"), "--gpus '-1': " + forms);
  EXPECT_EQ(parse_error("0,,2"), "--gpus '0,,2': " + forms);
  EXPECT_EQ(parse_error("0,"), "--gpus '0,': " + forms);
  EXPECT_EQ(parse_error("0, 2"), "--gpus '0, 2': " + forms);
  EXPECT_EQ(parse_error("ALL"), "--gpus 'ALL': " + forms);
  EXPECT_EQ(parse_error("0,2,0"), "--gpus '0,2,0': GPU 0 is listed twice; " + forms);
  EXPECT_EQ(parse_error("count=0"),
            "--gpus 'count=0': the count must be a positive integer; " + forms);
  EXPECT_EQ(parse_error("count="),
            "--gpus 'count=': the count must be a positive integer; " + forms);
  EXPECT_EQ(parse_error("auto:x"),
            "--gpus 'auto:x': the count must be a positive integer; " + forms);
}

TEST(GpuSelection, DevicesTheNodeLacksAreErrorsThatSayHowManyItHas) {
  EXPECT_EQ(choice_error("4", kFourGpus),
            "--gpus 4: there is no GPU 4: this node has 4 GPUs (indices start at 0; count=N "
            "takes the first N)");
  EXPECT_EQ(choice_error("0,1", by_free_memory({7})),
            "--gpus 0,1: there is no GPU 1: this node has 1 GPU (indices start at 0; count=N "
            "takes the first N)");
  EXPECT_EQ(choice_error("count=5", kFourGpus), "--gpus count=5: this node has 4 GPUs");
  EXPECT_EQ(choice_error("auto:2", by_free_memory({7})), "--gpus auto:2: this node has 1 GPU");
}

}  // namespace
}  // namespace lizard
