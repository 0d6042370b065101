#include "server/run_request.h"

#include <gtest/gtest.h>

#include <fstream>

#include "common/sha256.h"
#include "dataset/npy.h"
#include "dataset/test_files.h"
#include "hooks/host_hooks.h"
#include "program/bundle.h"
#include "program/testing/program_images.h"

namespace lizard {
namespace {

using nlohmann::json;

ProgramImage image(const std::string& config) {
  return testing::program_image(config);
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
  EXPECT_EQ(r->dataset[2].source, nullptr);
  ASSERT_TRUE(r->state);
  EXPECT_EQ(reinterpret_cast<const float*>(r->state->bytes.data())[1], -0.5f);
}

// The request's cap sets the program's `max_iterations` param, which its
// update hook stops the run by: the cap a user gives is the one that holds.
TEST(RunRequest, TheIterationCapSetsTheParamOfThatName) {
  const json base = {{"params", {{"dims", 1}}},
                     {"dataset", {{"x", {{"values", {{1}}}}}, {"y", {{"values", {1}}}}}}};
  json capped = base;
  capped["max_iterations"] = 150;
  auto r = parse_run_request(image(kConfig), capped);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->max_iterations, 150);
  EXPECT_EQ(r->params.lookup(image(kConfig).manifest, "max_iterations"), 150);
  EXPECT_EQ(r->spec.params.at("max_iterations"), 150);
  json same = capped;
  same["params"]["max_iterations"] = 150;
  ASSERT_TRUE(parse_run_request(image(kConfig), same).ok());
  json both = capped;  // the cap wins over the param's value
  both["params"]["max_iterations"] = 20;
  auto over = parse_run_request(image(kConfig), both);
  ASSERT_TRUE(over.ok()) << over.status().message();
  EXPECT_EQ(over->max_iterations, 150);
  EXPECT_EQ(over->params.lookup(image(kConfig).manifest, "max_iterations"), 150);
  auto plain = parse_run_request(image(kConfig), base);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->max_iterations, 7);
}

TEST(RunRequest, TheRunSeedIsTheRequestsOrDrawnAtRandom) {
  const json base = {{"params", {{"dims", 1}}},
                     {"dataset", {{"x", {{"values", {{1}}}}}, {"y", {{"values", {1}}}}}}};
  json seeded = base;
  seeded["seed"] = 18446744073709551615ull;
  auto r = parse_run_request(image(kConfig), seeded);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->spec.run_seed, 18446744073709551615ull);
  auto a = parse_run_request(image(kConfig), base);
  auto b = parse_run_request(image(kConfig), base);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->spec.run_seed, b->spec.run_seed);  // 1 in 2^64 to fail
  for (const json& bad : {json(-1), json(0.5), json("1"), json::array()}) {
    json body = base;
    body["seed"] = bad;
    auto e = parse_run_request(image(kConfig), body);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.status().code(), Code::kInvalidArgument);
    EXPECT_NE(e.status().message().find("`seed`"), std::string::npos) << e.status().message();
  }
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

TEST(RunRequest, ASourceIsOneKindWithItsOwnKeys) {
  json y = {{"values", {1}}};
  auto with_x = [&](json x) {
    return error_of({{"params", {{"dims", 2}}}, {"dataset", {{"x", x}, {"y", y}}}});
  };
  EXPECT_EQ(with_x({{"values", {{1, 2}}}, {"path", "/etc/hostname"}}),
            "dataset field 'x': give one of `values`, `path`, `upload` or `generate`, not both "
            "`values` and `path`");
  EXPECT_NE(with_x({{"upload", "u1"}, {"generate", "g"}}).find("not both `upload` and `generate`"),
            std::string::npos);
  EXPECT_EQ(with_x({{"values", {{1, 2}}}, {"fromat", "csv"}}),
            "dataset field 'x': unknown key 'fromat' in a `values` source (expected values)");
  EXPECT_EQ(
      with_x({{"path", "/nonexistent.csv"}, {"rows", 3}}),
      "dataset field 'x': unknown key 'rows' in a `path` source (expected path, format, verify)");
  EXPECT_EQ(with_x({{"values", {{1, 2}}}}), "");
}

// An .npy file (named by path or uploaded) whose dtype or shape does not fit
// the manifest's field: the error names the field, what the manifest asks for
// and what the file holds, never the file's values.
TEST(RunRequest, NpyThatDoesNotFitItsFieldSaysBothSides) {
  TempDir dir;
  const double wide[6] = {31337.25, 31337.25, 31337.25, 31337.25, 31337.25, 31337.25};
  const std::string f64 = dir.write("f64.npy", npy_bytes(DType::kFloat64, {3, 2}, wide));
  const float narrow[6] = {31337.25f, 31337.25f, 31337.25f, 31337.25f, 31337.25f, 31337.25f};
  const std::string f32 = dir.write("f32.npy", npy_bytes(DType::kFloat32, {2, 3}, narrow));
  const std::string both = dir.write("both.npy", npy_bytes(DType::kFloat64, {2, 3}, wide));
  const json y = {{"values", {1, 0, 1}}};
  UploadLookup uploads = [&](const std::string& id) -> Result<std::pair<std::string, FileFormat>> {
    if (id == "u64") return std::make_pair(f64, FileFormat::kNpy);
    if (id == "u32") return std::make_pair(f32, FileFormat::kNpy);
    return not_found("no such dataset: " + id);
  };
  auto error = [&](const json& x) {
    auto r = parse_run_request(
        image(kConfig), {{"params", {{"dims", 2}}}, {"dataset", {{"x", x}, {"y", y}}}}, uploads);
    EXPECT_FALSE(r.ok());
    const std::string m = r.ok() ? "" : r.status().message();
    EXPECT_EQ(m.find("31337"), std::string::npos) << m;
    return m;
  };
  EXPECT_EQ(error({{"path", f64}}),
            "dataset field 'x': " + f64 + ": expected <f4 (float32), file has <f8 (float64)");
  EXPECT_EQ(error({{"path", f32}}),
            "dataset field 'x': " + f32 +
                ": shape (2, 3) does not hold rows of 2 values; expected (rows, ...) with "
                "dimensions after rows multiplying to 2");
  const std::string m = error({{"path", both}});
  for (const char* part :
       {"dataset field 'x'", "<f4 (float32)", "<f8 (float64)", "shape (2, 3)", "rows of 2 values"})
    EXPECT_NE(m.find(part), std::string::npos) << part << " in " << m;
  // An upload is named by its id, not by where the server keeps it.
  EXPECT_EQ(error({{"upload", "u64"}}),
            "dataset field 'x' (upload u64): expected <f4 (float32), file has <f8 (float64)");
  EXPECT_EQ(error({{"upload", "u32"}}),
            "dataset field 'x' (upload u32): shape (2, 3) does not hold rows of 2 values; "
            "expected (rows, ...) with dimensions after rows multiplying to 2");
}

// A file named by path is pinned by its identity, and by the SHA-256 of its
// bytes where the request asks to verify content.
TEST(RunRequest, APathPinsItsVersionAndItsContentWhenAskedTo) {
  TempDir dir;
  const std::vector<float> v = {1, 2, 3, 4};
  const std::string bytes = npy_bytes(DType::kFloat32, {2, 2}, v.data());
  const std::string x = dir.write("x.npy", bytes);
  auto request = [&](const json& source) {
    return parse_run_request(
        image(kConfig),
        {{"params", {{"dims", 2}}}, {"dataset", {{"x", source}, {"y", {{"values", {1, 0}}}}}}});
  };
  auto plain = request({{"path", x}});
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  ASSERT_EQ(plain->spec.files.size(), 1u);
  EXPECT_EQ(plain->spec.files[0].identity, FileIdentity::of(x).value());
  EXPECT_EQ(plain->spec.files[0].content_sha256, "");
  auto verified = request({{"path", x}, {"verify", "content"}});
  ASSERT_TRUE(verified.ok()) << verified.status().message();
  ASSERT_EQ(verified->spec.files.size(), 1u);
  EXPECT_EQ(verified->spec.files[0].content_sha256, sha256_hex(bytes));
  auto bad = request({{"path", x}, {"verify", "bytes"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "dataset field 'x': `verify` must be \"identity\" (the default) or \"content\", not "
            "\"bytes\"");
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
