#include "server/dataset_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "dataset/npy.h"
#include "server/testing/fakes.h"

namespace lizard {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string upload(DatasetStore& ds, const std::string& bytes, const std::string& format,
                   Result<json>* meta) {
  std::string id;
  const std::string part = ds.reserve(&id);
  std::ofstream(part, std::ios::binary) << bytes;
  *meta = ds.commit(id, part, format);
  return id;
}

TEST(DatasetStore, UploadsAreDescribedListedFoundAndRemoved) {
  TempDir dir;
  DatasetStore ds(dir.path());
  const float v[4] = {1, 2, 3, 4};
  Result<json> meta = json();
  const std::string id = upload(ds, npy_bytes(DType::kFloat32, {2, 2}, v), "", &meta);
  ASSERT_TRUE(meta.ok()) << meta.status().message();
  EXPECT_EQ((*meta)["format"], "npy");
  EXPECT_EQ((*meta)["shape"], json::array({2, 2}));
  EXPECT_EQ(ds.list().size(), 1u);
  auto where = ds.lookup(id);
  ASSERT_TRUE(where.ok());
  EXPECT_EQ(where->second, FileFormat::kNpy);
  EXPECT_TRUE(fs::exists(where->first));
  // A new store on the same directory finds it again.
  DatasetStore again(dir.path());
  EXPECT_EQ(again.get(id).value()["shape"], json::array({2, 2}));
  EXPECT_TRUE(again.remove(id).ok());
  EXPECT_FALSE(fs::exists(where->first));
  EXPECT_EQ(again.get(id).status().code(), Code::kNotFound);
  EXPECT_EQ(again.remove(id).code(), Code::kNotFound);
  EXPECT_EQ(again.remove("../etc").code(), Code::kNotFound);
}

TEST(DatasetStore, BadUploadsAreRefusedAndNotKept) {
  TempDir dir;
  DatasetStore ds(dir.path());
  Result<json> meta = json();
  upload(ds, "not an npy file", "", &meta);
  EXPECT_EQ(meta.status().code(), Code::kInvalidArgument);
  EXPECT_NE(meta.status().message().find("?format=raw"), std::string::npos);
  upload(ds, "x", "csv", &meta);
  EXPECT_EQ(meta.status().message(), "format must be npy or raw (got 'csv')");
  EXPECT_TRUE(ds.list().empty());
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(fs::path(dir.path()) / "datasets")) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 0u);
  upload(ds, "rawbytes", "raw", &meta);
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ((*meta)["format"], "raw");
  EXPECT_EQ((*meta)["bytes"], 8);
}

// Descriptions this server did not write must not keep it from starting.
TEST(DatasetStore, MalformedDescriptionsAreSkippedOnReload) {
  TempDir dir;
  const fs::path d = fs::path(dir.path()) / "datasets";
  fs::create_directories(d);
  std::ofstream(d / "a.json") << R"({"id": 7, "file": "x", "format": "raw"})";
  std::ofstream(d / "b.json") << R"({"id": "b", "file": ["x"], "format": "raw"})";
  std::ofstream(d / "c.json") << "[1, 2]";
  std::ofstream(d / "d.json") << "{ broken";
  std::ofstream(d / "e.raw") << "rows";
  std::ofstream(d / "e.json") << R"({"id": "e", "file": ")" + (d / "e.raw").string() +
                                     R"(", "format": "raw", "bytes": 4})";
  std::ofstream(d / "f.part") << "an upload cut short";
  DatasetStore ds(dir.path());
  ASSERT_EQ(ds.list().size(), 1u);
  EXPECT_EQ(ds.list()[0]["id"], "e");
  EXPECT_TRUE(ds.remove("e").ok());
  EXPECT_FALSE(fs::exists(d / "f.part"));
}

}  // namespace
}  // namespace lizard
