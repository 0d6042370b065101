#include "cli/run_spec.h"

#include <gtest/gtest.h>

#include <fstream>

#include "dataset/npy.h"
#include "dataset/test_files.h"

namespace lizard {
namespace {

using nlohmann::json;

std::string error_of(const Status& s) {
  return s.ok() ? "ok" : s.message();
}

TEST(RunArgs, ParamsAreJsonValuesOrText) {
  RunArgs spec;
  ASSERT_TRUE(add_param(&spec, "k=4").ok());
  ASSERT_TRUE(add_param(&spec, "threshold=1e-4").ok());
  ASSERT_TRUE(add_param(&spec, "name=blobs").ok());
  ASSERT_TRUE(add_param(&spec, "expr=a=b").ok());  // the first '=' splits
  EXPECT_EQ(spec.params, json({{"k", 4}, {"threshold", 1e-4}, {"name", "blobs"}, {"expr", "a=b"}}));
  ASSERT_TRUE(add_param(&spec, "k=8").ok());  // the last one wins
  EXPECT_EQ(spec.params["k"], 8);
  EXPECT_EQ(error_of(add_param(&spec, "k")), "--param 'k': expected NAME=VALUE, e.g. k=4");
  EXPECT_EQ(error_of(add_param(&spec, "=4")), "--param '=4': expected NAME=VALUE, e.g. k=4");
  EXPECT_EQ(error_of(add_param(&spec, "k=")), "--param 'k=': the value is empty");
}

TEST(RunArgs, DatasetsNameAFieldAFormatAndAFile) {
  RunArgs spec;
  ASSERT_TRUE(add_dataset(&spec, "points=data/p.npy").ok());
  ASSERT_TRUE(add_dataset(&spec, "seeds=csv:/tmp/s.txt").ok());
  ASSERT_TRUE(add_dataset(&spec, "lizard:k.txt").ok());
  ASSERT_EQ(spec.datasets.size(), 3u);
  EXPECT_EQ(spec.datasets[0].field, "points");
  EXPECT_EQ(spec.datasets[0].file, "data/p.npy");
  EXPECT_EQ(spec.datasets[0].format, "");
  EXPECT_EQ(spec.datasets[1].format, "csv");
  EXPECT_EQ(spec.datasets[1].file, "/tmp/s.txt");
  EXPECT_EQ(spec.datasets[2].field, "");
  EXPECT_EQ(spec.datasets[2].format, "lizard");
  EXPECT_EQ(spec.datasets[2].file, "k.txt");
  RunArgs other;
  ASSERT_TRUE(add_dataset(&other, "x=c:/data.npy").ok());  // 'c' is no format: part of the path
  EXPECT_EQ(other.datasets[0].file, "c:/data.npy");
  EXPECT_EQ(error_of(add_dataset(&other, "x=b.npy")), "--dataset: field 'x' is given twice");
  EXPECT_EQ(error_of(add_dataset(&other, "=b.npy")),
            "--dataset '=b.npy': expected NAME=FILE (or FILE)");
  EXPECT_EQ(error_of(add_dataset(&other, "y=csv:")), "--dataset 'y=csv:': no file named");
}

// NAME=upload:ID names an upload on the server (lizard upload FILE), not a file.
TEST(RunArgs, DatasetsFromAnUpload) {
  RunArgs spec;
  ASSERT_TRUE(add_dataset(&spec, "points=upload:u3c1f0e9a7b52").ok());
  EXPECT_EQ(spec.datasets[0].field, "points");
  EXPECT_EQ(spec.datasets[0].upload, "u3c1f0e9a7b52");
  EXPECT_EQ(spec.datasets[0].file, "");
  EXPECT_EQ(error_of(add_dataset(&spec, "other=upload:")),
            "--dataset 'other=upload:': expected upload:ID (lizard upload FILE)");
}

// NAME=generate:KERNEL[,rows=N][,seed=S] names a generator of the manifest.
TEST(RunArgs, DatasetsFromAGenerator) {
  RunArgs spec;
  ASSERT_TRUE(add_dataset(&spec, "points=generate:blobs,rows=5000,seed=2").ok());
  ASSERT_TRUE(add_dataset(&spec, "other=generate:uniform").ok());
  ASSERT_EQ(spec.datasets.size(), 2u);
  EXPECT_EQ(spec.datasets[0].field, "points");
  EXPECT_EQ(spec.datasets[0].file, "");
  EXPECT_EQ(spec.datasets[0].generate_source(),
            (nlohmann::json{{"generate", "blobs"}, {"rows", 5000}, {"seed", 2}}));
  EXPECT_EQ(spec.datasets[1].generate_source(), (nlohmann::json{{"generate", "uniform"}}));
  for (const char* bad : {"p=generate:", "p=generate:blobs,rows=x", "p=generate:blobs,size=3",
                          "p=generate:blobs,rows=-1"}) {
    Status st = add_dataset(&spec, bad);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find(bad), std::string::npos) << st.message();
  }
}

// One generator that fills two fields is named once for both.
TEST(RunArgs, OneGeneratorForSeveralFields) {
  RunArgs spec;
  ASSERT_TRUE(add_dataset(&spec, "x,y=generate:pairs,rows=100,seed=4").ok());
  ASSERT_EQ(spec.datasets.size(), 2u);
  EXPECT_EQ(spec.datasets[0].field, "x");
  EXPECT_EQ(spec.datasets[1].field, "y");
  for (const auto& d : spec.datasets)
    EXPECT_EQ(d.generate_source(),
              (nlohmann::json{{"generate", "pairs"}, {"rows", 100}, {"seed", 4}}));
  RunArgs files;
  Status several = add_dataset(&files, "x,y=data.npy");
  EXPECT_NE(several.message().find("only a generator fills several fields"), std::string::npos)
      << several.message();
  EXPECT_FALSE(add_dataset(&files, "x,=generate:pairs").ok());
  RunArgs twice;
  ASSERT_TRUE(add_dataset(&twice, "x=generate:pairs").ok());
  EXPECT_NE(add_dataset(&twice, "y,x=generate:pairs").message().find("'x' is given twice"),
            std::string::npos);
}

TEST(RunArgs, StateFromJsonNumberListsAndFiles) {
  RunArgs spec;
  ASSERT_TRUE(add_state(&spec, "centroids=[[0,0],[1,1]]").ok());
  ASSERT_TRUE(add_state(&spec, "shift=0.5").ok());
  ASSERT_TRUE(add_state(&spec, "w=1,2, 3").ok());
  EXPECT_EQ(spec.state["centroids"], json::parse("[[0,0],[1,1]]"));
  EXPECT_EQ(spec.state["shift"], 0.5);
  EXPECT_EQ(spec.state["w"], json({1, 2, 3}));

  TempDir dir;
  const std::string text = dir.path("init.txt");
  std::ofstream(text) << "1.5 2\n3,4\n";
  ASSERT_TRUE(add_state(&spec, "c=" + text).ok());
  EXPECT_EQ(spec.state["c"], json({1.5, 2, 3, 4}));
  const std::string npy = dir.path("init.npy");
  const float values[] = {1, 2, 3, 4, 5, 6};
  std::ofstream(npy, std::ios::binary) << npy_bytes(DType::kFloat32, {3, 2}, values);
  ASSERT_TRUE(add_state(&spec, "c=" + npy).ok());
  EXPECT_EQ(spec.state["c"], json::parse("[[1,2],[3,4],[5,6]]"));

  EXPECT_EQ(error_of(add_state(&spec, "c=[1,2")),
            "--state c: '[1,2' is neither a file nor valid JSON numbers");
  EXPECT_EQ(error_of(add_state(&spec, "c=1,two")), "--state c: 'two' is not a number");
  EXPECT_EQ(error_of(add_state(&spec, "c=,")), "--state c: no values");
  EXPECT_EQ(error_of(add_state(&spec, "c")),
            "--state 'c': expected NAME=FILE or NAME=VALUES, e.g. shift=0");
  std::ofstream(dir.path("bad.txt")) << "1 x 3";
  EXPECT_EQ(error_of(add_state(&spec, "c=" + dir.path("bad.txt"))),
            dir.path("bad.txt") + ": 'x' is not a number");
}

TEST(RunArgs, ExecutorsAreACountOrARange) {
  EXPECT_EQ(parse_executors_arg("2").value(), json(2));
  EXPECT_EQ(parse_executors_arg("2:4").value(), json({{"min", 2}, {"max", 4}}));
  EXPECT_EQ(parse_executors_arg("3:").value(), json({{"min", 3}}));
  for (const char* bad : {"0", "-1", "two", "4:2", ":2", "1:0", "", "1:2:3"}) {
    auto r = parse_executors_arg(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message(), std::string("--executors '") + bad +
                                        "': expected N, MIN:MAX or MIN: (positive integers)");
  }
}

TEST(RunArgs, RequestCarriesWhatWasGiven) {
  RunArgs spec;
  EXPECT_EQ(spec.request_without_dataset(), json({{"params", json::object()}}));
  ASSERT_TRUE(add_param(&spec, "k=2").ok());
  ASSERT_TRUE(add_state(&spec, "shift=0").ok());
  spec.executors = 1;
  spec.max_iterations = 7;
  EXPECT_EQ(spec.request_without_dataset(), json({{"params", {{"k", 2}}},
                                                  {"state", {{"shift", 0}}},
                                                  {"executors", 1},
                                                  {"max_iterations", 7}}));
  spec.seed = 18446744073709551615ull;  // --seed: a whole uint64
  EXPECT_EQ(spec.request_without_dataset()["seed"].get<uint64_t>(), 18446744073709551615ull);
}

}  // namespace
}  // namespace lizard
