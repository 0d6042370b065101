#include "server/run_request.h"

#include <gtest/gtest.h>

#include <fstream>

#include "hooks/host_hooks.h"
#include "program/bundle.h"

namespace lizard {
namespace {

using nlohmann::json;

ProgramImage image(const std::string& config) {
  ProgramBundle b;
  b.config = config;
  b.sources["kernel.cu"] = "";
  auto img = make_program_image(b);
  EXPECT_TRUE(img.ok()) << img.status().message();
  return img.value();
}

const char* kConfig = R"(
sources: {cuda: kernel.cu}
params: {dims: {type: int32}, max_iterations: {type: int32, default: 7}}
dataset:
  x: {type: float32, shape: [rows, dims]}
  y: {type: int32, shape: [rows]}
  out: {type: float32, shape: [rows], input: false, output: true}
state: {w: {type: float32, shape: [dims]}}
aggregate: {g: {type: float32, shape: [dims], reduce: sum}}
iterate: [step]
)";

TEST(RunRequest, InlineValuesStateAndIterationCap) {
  auto r = parse_run_request(
      image(kConfig),
      json{{"params", {{"dims", 2}}},
           {"dataset",
            {{"x", {{"values", {{1, 2}, {3, 4}, {5, 6}}}}}, {"y", {{"values", {1, 0, 1}}}}}},
           {"state", {{"w", {0.5, -0.5}}}}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->rows, 3);
  EXPECT_EQ(r->max_iterations, 7);  // from the max_iterations param
  ASSERT_EQ(r->dataset.size(), 3u);
  EXPECT_EQ(r->dataset[0].values.size(), 6u * 4);
  EXPECT_EQ(r->dataset[2].kind, DatasetSource::Kind::kNone);
  ASSERT_TRUE(r->state);
  EXPECT_EQ(reinterpret_cast<const float*>(r->state->bytes.data())[1], -0.5f);
}

std::string error_of(const json& body) {
  auto r = parse_run_request(image(kConfig), body);
  return r.ok() ? "" : r.status().message();
}

TEST(RunRequest, ErrorsNameTheProblem) {
  json x = {{"values", {{1, 2}}}}, y = {{"values", {1}}};
  EXPECT_NE(error_of({{"params", {{"dims", 2}}}, {"dataset", {{"x", x}}}})
                .find("missing dataset field 'y'"),
            std::string::npos);
  EXPECT_NE(
      error_of({{"params", {{"dims", 2}}}, {"dataset", {{"x", x}, {"y", {{"values", {1, 2}}}}}}})
          .find("has 2 rows but 'x' has 1"),
      std::string::npos);
  EXPECT_NE(error_of({{"params", {{"dims", 2}}}, {"dataset", {{"x", x}, {"y", y}, {"out", y}}}})
                .find("not an input"),
            std::string::npos);
  EXPECT_NE(
      error_of(
          {{"params", {{"dims", 2}}}, {"dataset", {{"x", x}, {"y", y}}}, {"state", {{"w", {1}}}}})
          .find("state field 'w'"),
      std::string::npos);
  EXPECT_NE(
      error_of(
          {{"params", {{"dims", 2}}}, {"dataset", {{"x", x}, {"y", y}}}, {"max_iterations", 0}})
          .find("positive integer"),
      std::string::npos);
  EXPECT_NE(error_of({{"params", {{"dims", 2}}}, {"dataset", {{"x", x}, {"y", y}}}, {"bogus", 1}})
                .find("unknown key 'bogus'"),
            std::string::npos);
  EXPECT_NE(error_of({{"params", {{"dims", 2}}},
                      {"dataset",
                       {{"x", {{"values", json::array()}}}, {"y", {{"values", json::array()}}}}}})
                .find("no rows"),
            std::string::npos);
  EXPECT_NE(error_of({{"params", {{"dims", 2}}},
                      {"dataset", {{"x", {{"path", "/nonexistent.csv"}}}, {"y", y}}}})
                .find("cannot open /nonexistent.csv"),
            std::string::npos);
  EXPECT_NE(
      error_of({{"params", {{"dims", 2}}}, {"dataset", {{"x", {{"upload", "u1"}}}, {"y", y}}}})
          .find("upload"),
      std::string::npos);
}

TEST(HostHooks, CustomReducerNeedsAnAggregateHook) {
  ProgramImage img = image(R"(
sources: {cuda: kernel.cu}
dataset: {x: {type: float32, shape: [rows]}}
aggregate: {best: {type: float32, reduce: custom}}
iterate: [step]
)");
  HostCompiler cc(::testing::TempDir() + "/hooks");
  auto hooks = HostHooks::build(img, cc);
  ASSERT_FALSE(hooks.ok());
  EXPECT_NE(hooks.status().message().find("custom"), std::string::npos);
}

}  // namespace
}  // namespace lizard
