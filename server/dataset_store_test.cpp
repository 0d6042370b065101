#include "server/dataset_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "common/piece_digest.h"
#include "dataset/npy.h"
#include "server/durable_write.h"
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

// The description keeps the digest the body's reader computed, also after a
// restart, and the listing finds an upload by it.
TEST(DatasetStore, UploadsAreFoundByTheDigestOfTheirBytes) {
  TempDir dir;
  DatasetStore ds(dir.path());
  const float v[4] = {1, 2, 3, 4};
  const std::string bytes = npy_bytes(DType::kFloat32, {2, 2}, v);
  std::string id;
  auto sink = ds.open_upload(&id);
  ASSERT_TRUE(sink.ok());
  ASSERT_TRUE((*sink)->write(bytes.data(), 10).ok());
  ASSERT_TRUE((*sink)->write(bytes.data() + 10, bytes.size() - 10).ok());
  ASSERT_TRUE((*sink)->finish().ok());
  PieceDigest want;
  want.update(bytes.data(), bytes.size());
  const std::string digest = want.hex_digest();
  auto meta = ds.commit(id, (*sink)->path(), "", digest);
  ASSERT_TRUE(meta.ok()) << meta.status().message();
  EXPECT_EQ((*meta)["digest"], digest);
  Result<json> other = json();
  upload(ds, npy_bytes(DType::kFloat32, {1, 4}, v), "", &other);  // no digest given
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->contains("digest"));
  EXPECT_EQ(ds.list().size(), 2u);
  ds.wait_on_disk();
  DatasetStore again(dir.path());
  const json found = again.list(digest);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0]["id"], id);
  EXPECT_TRUE(again.list(std::string(64, '0')).empty());
}

TEST(DatasetStore, BadUploadsAreRefusedAndNotKept) {
  TempDir dir;
  DatasetStore ds(dir.path());
  Result<json> meta = json();
  upload(ds, "not an npy file", "", &meta);
  EXPECT_EQ(meta.status().code(), Code::kInvalidArgument);
  EXPECT_NE(meta.status().message().find("?format=raw"), std::string::npos);
  // An upload cut off inside its .npy header says so.
  const float v[4] = {1, 2, 3, 4};
  upload(ds, npy_bytes(DType::kFloat32, {2, 2}, v).substr(0, 40), "", &meta);
  EXPECT_EQ(meta.status().code(), Code::kInvalidArgument);
  EXPECT_NE(meta.status().message().find("not a valid .npy file (truncated .npy header"),
            std::string::npos)
      << meta.status().message();
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

// The files in <state>/datasets, by name.
std::vector<std::string> stored_files(const std::string& state_dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(fs::path(state_dir) / "datasets"))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Large writes are stored byte for byte.
TEST(DatasetStore, LargeWritesAreStoredByteForByte) {
  TempDir dir;
  DatasetStore ds(dir.path());
  std::vector<float> v(size_t{9} << 20);  // 36 MiB
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 65521);
  const std::string bytes = npy_bytes(DType::kFloat32, {int64_t{9} << 16, 16}, v.data());
  std::string id;
  auto sink = ds.open_upload(&id);
  ASSERT_TRUE(sink.ok());
  for (size_t at = 0, chunk = 5 << 20; at < bytes.size(); at += chunk)
    ASSERT_TRUE((*sink)->write(bytes.data() + at, std::min(chunk, bytes.size() - at)).ok());
  ASSERT_TRUE((*sink)->finish().ok());
  std::ifstream in((*sink)->path(), std::ios::binary);
  EXPECT_TRUE(std::string(std::istreambuf_iterator<char>(in), {}) == bytes);
  EXPECT_TRUE(ds.commit(id, (*sink)->path(), "npy", "").ok());
}

// A body streamed through open_upload() in chunks of `chunk` bytes; the first
// error, if any.
Status stream(UploadSink& sink, const std::string& bytes, size_t chunk) {
  for (size_t at = 0; at < bytes.size(); at += chunk)
    LIZARD_RETURN_IF_ERROR(sink.write(bytes.data() + at, std::min(chunk, bytes.size() - at)));
  return sink.finish();
}

// A disk that fills while an upload streams in (at a write, or at the flush)
// fails that upload as storage full, removes its partial file and leaves
// what was stored before as it was.
TEST(DatasetStore, AFullDiskFailsTheUploadRemovesItsFileAndKeepsTheRest) {
  TempDir dir;
  DatasetStore ds(dir.path());
  std::vector<float> v(4096);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  const std::string bytes = npy_bytes(DType::kFloat32, {1024, 4}, v.data());
  std::string kept;
  auto sink = ds.open_upload(&kept);
  ASSERT_TRUE(sink.ok()) << sink.status().message();
  ASSERT_TRUE(stream(**sink, bytes, 1000).ok());
  ASSERT_TRUE(ds.commit(kept, (*sink)->path(), "").ok());
  sink->reset();
  const std::vector<std::string> before = stored_files(dir.path());
  ASSERT_EQ(before.size(), 2u);  // its data and its description

  for (bool at_flush : {false, true}) {
    SCOPED_TRACE(at_flush ? "the flush fails" : "a write fails");
    std::string id;
    auto upload = ds.open_upload(&id);
    ASSERT_TRUE(upload.ok()) << upload.status().message();
    const std::string part = (*upload)->path();
    Status st;
    if (at_flush) {
      ASSERT_TRUE((*upload)->write(bytes.data(), bytes.size()).ok());
      fail_next_storage_writes(1);
      st = (*upload)->finish();
    } else {
      ASSERT_TRUE((*upload)->write(bytes.data(), 1000).ok());
      EXPECT_TRUE(fs::exists(part));
      fail_next_storage_writes(1);
      st = (*upload)->write(bytes.data() + 1000, 1000);
    }
    fail_next_storage_writes(0);
    EXPECT_EQ(st.code(), Code::kStorageFull) << st.message();
    EXPECT_EQ(st.message(), "the server's disk is full: upload " + id +
                                " was not stored (free space in its --state-dir and try again)");
    EXPECT_FALSE(fs::exists(part)) << "the partial upload was left behind";
    EXPECT_FALSE((*upload)->write("x", 1).ok()) << "a failed upload took more bytes";
    EXPECT_EQ(stored_files(dir.path()), before);
  }

  EXPECT_EQ(ds.list().size(), 1u);
  DatasetStore again(dir.path());
  auto meta = again.get(kept);
  ASSERT_TRUE(meta.ok()) << meta.status().message();
  EXPECT_EQ((*meta)["shape"], json::array({1024, 4}));
  std::ifstream in(again.lookup(kept)->first, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), bytes);

  std::string next;  // and there is room again
  auto upload = again.open_upload(&next);
  ASSERT_TRUE(upload.ok());
  ASSERT_TRUE(stream(**upload, bytes, 4096).ok());
  EXPECT_TRUE(again.commit(next, (*upload)->path(), "npy").ok());
  EXPECT_EQ(again.list().size(), 2u);
}

// An upload streamed through a sink and committed with its PieceDigest, as
// the server's readers do; its id.
std::string upload_with_digest(DatasetStore& ds, const std::string& bytes) {
  std::string id;
  auto sink = ds.open_upload(&id);
  EXPECT_TRUE(sink.ok());
  EXPECT_TRUE(stream(**sink, bytes, 1 << 20).ok());
  PieceDigest d;
  d.update(bytes.data(), bytes.size());
  EXPECT_TRUE(ds.commit(id, (*sink)->path(), "npy", d.hex_digest()).ok());
  return id;
}

// A committed upload is listed at once and on disk soon after, its marker
// gone; an upload committed without a digest (which nothing could check
// after a crash) is on disk before it is listed.
TEST(DatasetStore, AnUploadGoesToDiskAfterItsCommitAndLeavesNoMarker) {
  TempDir dir;
  const fs::path d = fs::path(dir.path()) / "datasets";
  std::vector<float> v(size_t{5} << 20);  // 20 MiB: two pieces
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 8191);
  const std::string bytes = npy_bytes(DType::kFloat32, {int64_t{5} << 18, 4}, v.data());
  std::string id, plain;
  {
    DatasetStore ds(dir.path());
    id = upload_with_digest(ds, bytes);
    EXPECT_TRUE(ds.get(id).ok());
    ds.wait_on_disk();
    EXPECT_FALSE(fs::exists(d / (id + ".syncing")));
    Result<json> meta = json();
    plain = upload(ds, bytes, "npy", &meta);
    ASSERT_TRUE(meta.ok());
    EXPECT_FALSE(fs::exists(d / (plain + ".syncing")));
    id = upload_with_digest(ds, bytes);  // the store goes before its flush is done
  }
  EXPECT_FALSE(fs::exists(d / (id + ".syncing"))) << "a clean stop left a marker";
  DatasetStore again(dir.path());
  EXPECT_EQ(again.list().size(), 3u);
}

// A server that stopped before an upload was on disk (its marker is still
// there) keeps it at its next start only if its file has every byte it was
// sent with; a torn or changed file goes with its description, and a marker
// whose description was never written goes too.
TEST(DatasetStore, AnUploadTheServerStoppedBeforeFlushingIsKeptOnlyWhenWhole) {
  TempDir dir;
  const fs::path d = fs::path(dir.path()) / "datasets";
  std::vector<float> v(size_t{5} << 20);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 8191);
  const std::string bytes = npy_bytes(DType::kFloat32, {int64_t{5} << 18, 4}, v.data());
  std::string whole, torn, changed;
  {
    DatasetStore ds(dir.path());
    whole = upload_with_digest(ds, bytes);
    torn = upload_with_digest(ds, bytes);
    changed = upload_with_digest(ds, bytes);
    ds.wait_on_disk();
  }
  for (const std::string& id : {whole, torn, changed, std::string("unlisted")})
    std::ofstream(d / (id + ".syncing")) << "";  // as if the server had stopped at once
  fs::resize_file(d / (torn + ".npy"), bytes.size() - 100);
  {
    std::fstream f(d / (changed + ".npy"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(bytes.size()) - 7);
    f.put('\x5a');
  }
  DatasetStore again(dir.path());
  ASSERT_EQ(again.list().size(), 1u);
  EXPECT_EQ(again.list()[0]["id"], whole);
  EXPECT_EQ(again.get(torn).status().code(), Code::kNotFound);
  EXPECT_EQ(again.get(changed).status().code(), Code::kNotFound);
  EXPECT_EQ(stored_files(dir.path()), (std::vector<std::string>{whole + ".json", whole + ".npy"}));
  std::ifstream in(again.lookup(whole)->first, std::ios::binary);
  EXPECT_TRUE(std::string(std::istreambuf_iterator<char>(in), {}) == bytes);
}

// An upload whose connection ends early leaves no file behind.
TEST(DatasetStore, AnUploadNeverFinishedLeavesNoFile) {
  TempDir dir;
  DatasetStore ds(dir.path());
  std::string id;
  auto upload = ds.open_upload(&id);
  ASSERT_TRUE(upload.ok());
  const std::string part = (*upload)->path();
  ASSERT_TRUE((*upload)->write("some bytes", 10).ok());
  EXPECT_TRUE(fs::exists(part));
  upload->reset();
  EXPECT_FALSE(fs::exists(part));
  EXPECT_TRUE(stored_files(dir.path()).empty());
}

}  // namespace
}  // namespace lizard
