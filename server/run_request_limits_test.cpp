// The limits parse_run_request enforces before allocating or reading
// anything: implied state/aggregate sizes, dataset row sizes, data roots.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "dataset/test_files.h"
#include "program/bundle.h"
#include "program/testing/program_images.h"
#include "server/run_request.h"

namespace lizard {
namespace {

using nlohmann::json;

ProgramImage image(const std::string& config) {
  return testing::program_image(config);
}

// examples/sum's shape: an aggregate as wide as the `dims` param.
const char* kSum = R"(
sources: {cuda: kernel.cu}
params: {dims: {type: int32}}
dataset: {values: {type: float64, shape: [rows, dims]}}
aggregate:
  sums: {type: float64, shape: [dims], reduce: sum}
  count: {type: int64, reduce: sum}
iterate: [column_sums]
)";

TEST(RunRequestLimits, HugeParamsAreRefusedAtOnce) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = parse_run_request(
      image(kSum), json{{"params", {{"dims", 2147483647}}},
                        {"dataset", {{"values", {{"values", json::array({json::array({1})})}}}}}});
  const auto elapsed = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kTooLarge);
  EXPECT_NE(r.status().message().find("--max-state-bytes"), std::string::npos)
      << r.status().message();
  EXPECT_LT(elapsed, std::chrono::seconds(1));
}

TEST(RunRequestLimits, TheLimitIsConfigurable) {
  json body = {{"params", {{"dims", 8}}},
               {"dataset", {{"values", {{"values", {1, 2, 3, 4, 5, 6, 7, 8}}}}}}};
  RunRequestLimits small;
  small.max_state_bytes = 64;  // sums (64 bytes) + count (16, aligned) pass it
  auto refused = parse_run_request(image(kSum), body, nullptr, small);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kTooLarge);
  auto accepted = parse_run_request(image(kSum), body);
  ASSERT_TRUE(accepted.ok()) << accepted.status().message();
  EXPECT_EQ(accepted->rows, 1);
}

TEST(RunRequestLimits, ConstantShapesBeyondTheLimitAreRefused) {
  const char* config = R"(
sources: {cuda: kernel.cu}
dataset: {x: {type: float32, shape: [rows]}}
aggregate: {big: {type: float32, shape: [100000000000], reduce: sum}}
iterate: [step]
)";
  auto r = parse_run_request(image(config), json{{"dataset", {{"x", {{"values", {1, 2}}}}}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kTooLarge);
}

TEST(RunRequestLimits, RowsWiderThanTheLimitAreRefused) {
  const char* config = R"(
sources: {cuda: kernel.cu}
params: {dims: {type: int32}}
dataset: {x: {type: float64, shape: [rows, dims]}}
iterate: [step]
)";
  auto r = parse_run_request(
      image(config), json{{"params", {{"dims", 2147483647}}},
                          {"dataset", {{"x", {{"values", json::array({json::array({1})})}}}}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kTooLarge);
  EXPECT_NE(r.status().message().find("one row"), std::string::npos) << r.status().message();
}

const char* kOneColumn = R"(
sources: {cuda: kernel.cu}
dataset: {x: {type: float32, shape: [rows, 3]}}
iterate: [step]
)";

json path_body(const std::string& path) {
  return {{"dataset", {{"x", {{"path", path}, {"format", "raw"}}}}}};
}

TEST(RunRequestLimits, DatasetPathsMustLieUnderTheDataRoots) {
  TempDir dir;
  std::filesystem::create_directories(dir.path("data"));
  std::filesystem::create_directories(dir.path("private"));
  const std::string inside = dir.write("data/x.raw", std::string(24, '\0'));
  const std::string outside = dir.write("private/secret.raw", std::string(100, 'z'));
  auto roots = DataRoots::make({dir.path("data")}, "server");
  ASSERT_TRUE(roots.ok());
  RunRequestLimits limits;
  limits.data_roots = &roots.value();

  auto ok = parse_run_request(image(kOneColumn), path_body(inside), nullptr, limits);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->rows, 2);

  for (const std::string& p :
       {outside, dir.path("data/../private/secret.raw"), std::string("/etc/shadow")}) {
    auto r = parse_run_request(image(kOneColumn), path_body(p), nullptr, limits);
    ASSERT_FALSE(r.ok()) << p;
    EXPECT_EQ(r.status().code(), Code::kPermissionDenied);
    EXPECT_EQ(r.status().message(),
              "dataset field 'x': dataset path is outside the server's data roots (--data-root)");
  }
}

// Without data roots any readable file is taken; its errors still say
// nothing of its size or contents.
TEST(RunRequestLimits, FileErrorsDoNotRevealSizes) {
  TempDir dir;
  const std::string odd = dir.write("odd.raw", std::string(100, 'z'));
  auto r = parse_run_request(image(kOneColumn), path_body(odd));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().find("100"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("not a whole number of rows"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace lizard
