// POST /datasets/stage bodies: an .npy file's element type and row width
// come from its header, a raw file's from the body; what cannot be staged
// is refused with the reason, and a path outside the data roots with 403.
#include "server/stage_request.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "dataset/npy.h"
#include "dataset/test_files.h"

namespace lizard {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

class StageRequestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A directory of its own: ctest runs this suite's tests in parallel processes.
    dir_ = tmp_.path();
    fs::create_directories(dir_ + "/root");
    std::vector<double> v(30, 1.0);
    std::ofstream(dir_ + "/root/x.npy", std::ios::binary)
        << npy_bytes(DType::kFloat64, {5, 3, 2}, v.data());
    std::ofstream(dir_ + "/root/x.raw", std::ios::binary) << std::string(64, '\0');
    std::ofstream(dir_ + "/root/x.csv") << "1,2\n3,4\n";
    std::ofstream(dir_ + "/outside.npy", std::ios::binary)
        << npy_bytes(DType::kFloat64, {5, 3, 2}, v.data());
    auto roots = DataRoots::make({dir_ + "/root"}, "server");
    ASSERT_TRUE(roots.ok()) << roots.status().message();
    roots_ = *roots;
  }
  // `body` for the runs of program "p1" (unless it names one).
  Result<StageRequest> parse(json body) {
    if (body.is_object() && !body.contains("program")) body["program"] = "p1";
    return parse_stage_request(body.dump(), roots_);
  }
  TempDir tmp_;
  std::string dir_;
  DataRoots roots_;
};

TEST_F(StageRequestTest, AnNpyFileGivesItsTypeWidthAndRows) {
  auto r = parse({{"path", dir_ + "/root/x.npy"}, {"executors", 2}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->format, FileFormat::kNpy);
  EXPECT_EQ(r->dtype, DType::kFloat64);
  EXPECT_EQ(r->width, 6);
  EXPECT_EQ(r->rows, 5);
  EXPECT_EQ(r->executors, 2);
  EXPECT_EQ(r->to_json()["dtype"], "float64");
  auto wrong = parse({{"path", dir_ + "/root/x.npy"}, {"dtype", "float32"}});
  EXPECT_EQ(wrong.status().message(), dir_ + "/root/x.npy holds float64 values, not float32");
  EXPECT_FALSE(parse({{"path", dir_ + "/root/x.npy"}, {"width", 4}}).ok());
}

TEST_F(StageRequestTest, ARawFileNeedsItsTypeAndWidth) {
  auto r = parse({{"path", dir_ + "/root/x.raw"}, {"dtype", "int32"}, {"width", 4}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->format, FileFormat::kRaw);
  EXPECT_EQ(r->rows, 4);  // 64 bytes of 4 x int32
  EXPECT_EQ(parse({{"path", dir_ + "/root/x.raw"}, {"dtype", "int32"}}).status().message(),
            "a raw file needs `dtype` and `width` (values per row)");
  EXPECT_FALSE(parse({{"path", dir_ + "/root/x.raw"}, {"dtype", "int32"}, {"width", 5}}).ok());
}

TEST_F(StageRequestTest, WhatCannotBeStagedIsRefused) {
  auto outside = parse({{"path", dir_ + "/outside.npy"}});
  EXPECT_EQ(outside.status().code(), Code::kPermissionDenied) << outside.status().message();
  EXPECT_EQ(parse({{"path", dir_ + "/root/missing.npy"}}).status().message(),
            "cannot open " + dir_ + "/root/missing.npy: No such file or directory");
  EXPECT_EQ(parse({{"path", dir_ + "/root/x.csv"}}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(parse({{"upload", "u0123456789ab"}}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(parse({{"path", dir_ + "/root/x.npy"}, {"executors", 0}}).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(parse({{"path", dir_ + "/root/x.npy"}, {"rows", 3}}).status().message(),
            "unknown key 'rows' in the stage request (expected path, program, format, dtype, "
            "width or executors)");
  // The program whose runs read the rows: their executor processes keep them.
  EXPECT_EQ(parse({{"path", dir_ + "/root/x.npy"}, {"program", ""}}).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(parse({{"path", dir_ + "/root/x.npy"}, {"program", 3}}).status().code(),
            Code::kInvalidArgument);
  auto named = parse({{"path", dir_ + "/root/x.npy"}, {"program", "abc"}});
  ASSERT_TRUE(named.ok()) << named.status().message();
  EXPECT_EQ(named->program, "abc");
  EXPECT_EQ(named->to_json()["program"], "abc");
  EXPECT_FALSE(parse_stage_request("not json", roots_).ok());
  EXPECT_FALSE(parse(json::array()).ok());
}

}  // namespace
}  // namespace lizard
