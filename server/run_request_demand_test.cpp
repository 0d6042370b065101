// The keys of a run request that choose its executors: `executors`, `gpus`
// and `min_free_memory`.
#include <gtest/gtest.h>

#include "program/bundle.h"
#include "server/run_request.h"

namespace lizard {
namespace {

using nlohmann::json;

const ProgramImage& sum_program() {
  static const ProgramImage img = [] {
    ProgramBundle b;
    b.config = R"(
sources: {cuda: kernel.cu}
params: {dims: {type: int32}}
dataset: {values: {type: float64, shape: [rows, dims]}}
aggregate: {sums: {type: float64, shape: [dims], reduce: sum}}
iterate: [column_sums]
)";
    b.sources["kernel.cu"] = "";
    return make_program_image(b).value();
  }();
  return img;
}

Result<RunRequest> parse_with(const json& extra) {
  json body = {{"params", {{"dims", 1}}}, {"dataset", {{"values", {{"values", {{1}, {2}}}}}}}};
  body.update(extra);
  return parse_run_request(sum_program(), body);
}

TEST(RunRequestDemand, GpusTakesTheFormsOfExecutorsAndAsksForGpus) {
  auto r = parse_with({{"gpus", 2}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->executors.min, 2);
  EXPECT_EQ(r->executors.max, 2);
  EXPECT_TRUE(r->executors.gpus_only);

  r = parse_with({{"gpus", {{"min", 1}, {"max", 3}}}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->executors.min, 1);
  EXPECT_EQ(r->executors.max, 3);
  EXPECT_TRUE(r->executors.gpus_only);

  r = parse_with({{"executors", 2}});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->executors.gpus_only);

  r = parse_with(json::object());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->executors.min, 1);
  EXPECT_EQ(r->executors.max, 0);
  EXPECT_FALSE(r->executors.gpus_only);
  EXPECT_EQ(r->executors.min_free_memory, 0u);
}

TEST(RunRequestDemand, MinFreeMemoryIsBytes) {
  auto r = parse_with({{"min_free_memory", uint64_t{8} << 30}, {"gpus", 1}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->executors.min_free_memory, uint64_t{8} << 30);
  EXPECT_TRUE(r->executors.gpus_only);
}

TEST(RunRequestDemand, ErrorsNameTheKey) {
  auto error = [](const json& extra) {
    auto r = parse_with(extra);
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(error({{"gpus", 1}, {"executors", 1}}).find("give `executors` or `gpus`, not both"),
            std::string::npos);
  EXPECT_NE(error({{"gpus", 0}}).find("`gpus` must be a positive integer"), std::string::npos);
  EXPECT_NE(error({{"gpus", "all"}}).find("`gpus` must be"), std::string::npos);
  EXPECT_NE(error({{"gpus", {{"min", 3}, {"max", 2}}}}).find("`gpus` must be"), std::string::npos);
  EXPECT_NE(error({{"executors", {{"least", 1}}}}).find("`executors` must be"), std::string::npos);
  for (const json& bad : {json(-1), json("8GiB"), json(1.5)})
    EXPECT_NE(error({{"min_free_memory", bad}}).find("`min_free_memory` must be a number of bytes"),
              std::string::npos)
        << bad;
  EXPECT_NE(error({{"gpu", 1}}).find("unknown key 'gpu'"), std::string::npos);
}

}  // namespace
}  // namespace lizard
