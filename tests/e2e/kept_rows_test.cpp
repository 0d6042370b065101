// Rows read from a dataset file stay on the executors that read them, keyed
// by the file's identity and the rows' range: a later run over the same
// file names them instead of reading it (the record's file_bytes_read and
// file_bytes_kept tell which), and a file rewritten in place (even with its
// mtime put back), replaced by a rename, or a plan that moves the rows, is
// read afresh; so is a file written through a shared mapping, whose identity
// does not move, when the run verifies its content.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "dataset/file_identity.h"
#include "dataset/npy.h"
#include "local_cluster.h"

namespace lizard {
namespace {

using nlohmann::json;

constexpr int64_t kRows = 4000, kDims = 2;
constexpr uint64_t kBytes = kRows * kDims * sizeof(double);

// Rows whose column sums are `scale` x (sum of i, sum of 2i): a new scale is new values.
void write_values(const std::string& path, double scale) {
  std::vector<double> v(kRows * kDims);
  for (int64_t i = 0; i < kRows; ++i) v[i * 2] = scale * i, v[i * 2 + 1] = scale * 2 * i;
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      << npy_bytes(DType::kFloat64, {kRows, kDims}, v.data());
}

double first_sum(double scale) {
  return scale * (kRows - 1) * kRows / 2.0;
}

// The file's mtime moved on by a second, as a later write would leave it.
void touch_later(const std::string& path) {
  namespace fs = std::filesystem;
  fs::last_write_time(path, fs::last_write_time(path) + std::chrono::seconds(1));
}

// The file's bytes, mapped shared and writable, as a program that changes a
// dataset file in place holds it.  Once written through, a page stays
// writable: on tmpfs, later writes move neither mtime nor ctime.
class SharedMapping {
 public:
  explicit SharedMapping(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDWR);
    EXPECT_GE(fd_, 0) << std::strerror(errno);
    at_ = ::mmap(nullptr, kBytes + 128, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    EXPECT_NE(at_, MAP_FAILED) << std::strerror(errno);
  }
  ~SharedMapping() {
    if (at_ != MAP_FAILED) ::munmap(at_, kBytes + 128);
    if (fd_ >= 0) ::close(fd_);
  }
  // Writes the file `write_values(path, scale)` would write, over the mapping.
  void write_values(const std::string& scratch, double scale) {
    lizard::write_values(scratch, scale);
    std::ifstream in(scratch, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::remove(scratch.c_str());
    ASSERT_LE(bytes.size(), kBytes + 128);
    if (at_ != MAP_FAILED) std::memcpy(at_, bytes.data(), bytes.size());
  }

 private:
  int fd_ = -1;
  void* at_ = MAP_FAILED;
};

// One worker; with one executor, a run has no choice of where to go.
class KeptFileRows : public ::testing::Test {
 protected:
  void start(int executors = 1) {
    ASSERT_TRUE(c_.start(1, {"--cpu-executors", std::to_string(executors)}).ok());
    hash_ = register_program(c_, LIZARD_SOURCE_DIR "/examples/sum");
    ASSERT_FALSE(hash_.empty());
    path_ = c_.dir() + "/values.npy";
    write_values(path_, 1);
  }
  json run(int executors = 1, const json& source_keys = json::object()) {
    json source = {{"path", path_}};
    source.update(source_keys);
    json body = {
        {"params", {{"dims", kDims}}}, {"dataset", {{"values", source}}}, {"executors", executors}};
    auto r = c_.post("/runtime/" + hash_ + "?wait=1", body.dump());
    if (!r.ok()) return json();
    return json::parse(r->body, nullptr, false);
  }
  static void expect_sums(const json& rec, double scale) {
    ASSERT_EQ(rec.value("status", ""), "done") << rec.dump(2);
    EXPECT_EQ(rec["result"]["aggregate"]["count"], kRows);
    EXPECT_DOUBLE_EQ(rec["result"]["aggregate"]["sums"][0].get<double>(), first_sum(scale));
    EXPECT_DOUBLE_EQ(rec["result"]["aggregate"]["sums"][1].get<double>(), 2 * first_sum(scale));
  }
  LocalCluster c_;
  std::string hash_, path_;
};

TEST_F(KeptFileRows, ASecondRunOverTheFileReadsNothing) {
  start();
  json first = run();
  expect_sums(first, 1);
  EXPECT_EQ(first["phases"]["file_bytes_read"], kBytes) << first["phases"].dump();
  EXPECT_EQ(first["phases"]["file_bytes_kept"], 0u);
  json second = run();
  expect_sums(second, 1);
  EXPECT_EQ(second["phases"]["file_bytes_read"], 0u) << second["phases"].dump();
  EXPECT_EQ(second["phases"]["file_bytes_kept"], kBytes);
}

TEST_F(KeptFileRows, AFileRewrittenInPlaceIsReadAfresh) {
  start();
  expect_sums(run(), 1);
  write_values(path_, 3);  // same size, same inode, new values
  touch_later(path_);
  json rec = run();
  expect_sums(rec, 3);
  EXPECT_EQ(rec["phases"]["file_bytes_read"], kBytes) << rec["phases"].dump();
  EXPECT_EQ(rec["phases"]["file_bytes_kept"], 0u);
}

// Truncated and written again, the same size, with the mtime put back by
// utimensat: only the ctime moved, and the rows are read afresh, where the
// old rows were named by key and the run answered with the old values.
TEST_F(KeptFileRows, ARewriteWithItsMtimePutBackIsReadAfresh) {
  start();
  expect_sums(run(), 1);
  const auto mtime = std::filesystem::last_write_time(path_);
  write_values(path_, 7);  // same size, same inode, new values
  std::filesystem::last_write_time(path_, mtime);
  ASSERT_EQ(std::filesystem::last_write_time(path_), mtime);
  json rec = run();
  expect_sums(rec, 7);
  EXPECT_EQ(rec["phases"]["file_bytes_read"], kBytes) << rec["phases"].dump();
  EXPECT_EQ(rec["phases"]["file_bytes_kept"], 0u);
}

TEST_F(KeptFileRows, AFileReplacedByARenameIsReadAfresh) {
  start();
  expect_sums(run(), 1);
  const auto mtime = std::filesystem::last_write_time(path_);
  const std::string next = c_.dir() + "/values.next.npy";
  write_values(next, 5);
  std::filesystem::last_write_time(next, mtime);  // only the inode tells them apart
  ASSERT_EQ(std::rename(next.c_str(), path_.c_str()), 0);
  json rec = run();
  expect_sums(rec, 5);
  EXPECT_EQ(rec["phases"]["file_bytes_read"], kBytes) << rec["phases"].dump();
  EXPECT_EQ(rec["phases"]["file_bytes_kept"], 0u);
}

TEST_F(KeptFileRows, APlanThatMovesTheRowsReadsTheNewRanges) {
  start(2);
  expect_sums(run(1), 1);
  json split = run(2);  // two executors: each a part the first run did not keep as such
  expect_sums(split, 1);
  EXPECT_EQ(split["phases"]["file_bytes_read"], kBytes) << split["phases"].dump();
  EXPECT_EQ(split["phases"]["file_bytes_kept"], 0u);
  json again = run(2);  // the same plan: the same parts
  expect_sums(again, 1);
  EXPECT_EQ(again["phases"]["file_bytes_read"], 0u) << again["phases"].dump();
  EXPECT_EQ(again["phases"]["file_bytes_kept"], kBytes);
  json whole = run(1);  // whichever executor it lands on, the answer is the file's
  expect_sums(whole, 1);
  EXPECT_EQ(whole["phases"]["file_bytes_read"].get<uint64_t>() +
                whole["phases"]["file_bytes_kept"].get<uint64_t>(),
            kBytes)
      << whole["phases"].dump();
}

TEST_F(KeptFileRows, WorkersReportTheRowsTheirExecutorsKeep) {
  start();
  expect_sums(run(), 1);
  // Reported with the worker's next resource report (every few seconds).
  json kept;
  for (int i = 0; i < 150 && kept.empty(); ++i) {  // 15 s at most
    json clients = get_json(c_, "/clients");
    for (const auto& w : clients)
      for (const auto& e : w["hardware"]["executors"])
        for (const auto& k : e.value("kept_rows", json::array())) kept.push_back(k);
    if (kept.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(kept.size(), 1u) << kept.dump();
  EXPECT_EQ(kept[0]["bytes"], kBytes);
  EXPECT_EQ(kept[0]["description"], path_ + " rows 0..4000 (float64 x 2)");
}

// A file on tmpfs written through a shared mapping that was written through
// before keeps its identity (there neither time moves), so rows kept under
// it would answer with the old values; a run that verifies content reads it
// afresh, and takes the kept rows while the bytes are unchanged.
TEST_F(KeptFileRows, WritesThroughAMappingAreReadAfreshWhenTheRunVerifiesContent) {
  start();
  const bool tmpfs = ::access("/dev/shm", W_OK) == 0;
  if (tmpfs) {
    path_ = "/dev/shm/lizard-kept-rows-" + std::to_string(::getpid()) + ".npy";
    write_values(path_, 1);
  }
  struct Removed {
    std::string path;
    ~Removed() { std::remove(path.c_str()); }
  } removed{path_};
  const std::string scratch = c_.dir() + "/scratch.npy";
  SharedMapping mapping(path_);
  mapping.write_values(scratch, 1);  // every page written through once
  const json verify = {{"verify", "content"}};
  json first = run(1, verify);
  expect_sums(first, 1);
  EXPECT_EQ(first["phases"]["file_bytes_read"], kBytes) << first["phases"].dump();
  ASSERT_EQ(first["files"].size(), 1u) << first.dump(2);
  EXPECT_EQ(first["files"][0]["content_sha256"].get<std::string>().size(), 64u);
  json again = run(1, verify);
  expect_sums(again, 1);
  EXPECT_EQ(again["phases"]["file_bytes_kept"], kBytes) << again["phases"].dump();

  const FileIdentity before = FileIdentity::of(path_).value();
  mapping.write_values(scratch, 9);
  if (tmpfs) {  // what no identity sees
    EXPECT_EQ(FileIdentity::of(path_).value(), before);
  }
  json changed = run(1, verify);
  expect_sums(changed, 9);
  EXPECT_EQ(changed["phases"]["file_bytes_read"], kBytes) << changed["phases"].dump();
  EXPECT_EQ(changed["phases"]["file_bytes_kept"], 0u);
  EXPECT_NE(changed["files"][0]["content_sha256"], first["files"][0]["content_sha256"]);
}

}  // namespace
}  // namespace lizard
