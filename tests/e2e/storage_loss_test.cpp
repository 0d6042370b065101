// The server's state directory fills up or disappears under a real server:
// a run is never reported done without its record on disk, a run whose
// finish could not be stored never runs again after a restart, and a
// removed state directory fails requests with the reason instead of
// acknowledging what it cannot keep.
#include <gtest/gtest.h>
#include <sys/mount.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "local_cluster.h"

namespace lizard {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A tmpfs of `mib` MiB mounted at `dir` for the test's life (root only).
class SmallTmpfs {
 public:
  SmallTmpfs(const std::string& dir, int mib) : dir_(dir) {
    fs::create_directories(dir_);
    const std::string opts = "size=" + std::to_string(mib) + "m";
    if (::mount("tmpfs", dir_.c_str(), "tmpfs", 0, opts.c_str()) == 0)
      mounted_ = true;
    else
      why_ = std::strerror(errno);
  }
  ~SmallTmpfs() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  const std::string& why() const { return why_; }

  // Writes a file until the file system has no room left.
  void fill() const {
    std::FILE* f = std::fopen((dir_ + "/filler").c_str(), "wb");
    if (!f) return;
    const std::string chunk(64 * 1024, 'f');
    while (std::fwrite(chunk.data(), 1, chunk.size(), f) == chunk.size()) {
    }
    std::fclose(f);
  }

 private:
  std::string dir_, why_;
  bool mounted_ = false;
};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// k-means on a million generated rows for 400 iterations: its labels field
// (4 MB) is a file in the state directory, which a full disk refuses.
json long_kmeans_run() {
  return {{"params", {{"k", 4}, {"dims", 2}, {"max_iterations", 400}, {"threshold", -1}}},
          {"dataset", {{"points", {{"generate", "blobs"}, {"seed", 7}, {"rows", 1000000}}}}},
          {"state", {{"centroids", {-1, -1, 1, -1, -1, 1, 1, 1}}}}};
}

TEST(StorageLoss, AFullDiskDuringARunIsNeverReportedDoneAndNeverRunsAgain) {
  LocalCluster c;
  SmallTmpfs disk(c.dir() + "/server", 8);
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here: " << disk.why();
  ASSERT_TRUE(c.start(1, {"--cpu-threads", "1"}).ok());
  const std::string hash = register_program(c, LIZARD_SOURCE_DIR "/examples/kmeans");
  ASSERT_FALSE(hash.empty());
  const std::string id = submit_run(c, hash, long_kmeans_run());
  ASSERT_FALSE(id.empty());
  for (int i = 0; i < 3000 && get_json(c, "/runtimes/" + id).value("iterations", 0) < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(get_json(c, "/runtimes/" + id).value("status", ""), "running");
  disk.fill();
  const json ended = wait_until_finished(c, id, 120);
  ASSERT_EQ(ended.value("status", ""), "failed") << ended.dump(2);
  const std::string error = ended.value("error", "");
  EXPECT_EQ(error.rfind("the run ended, but the server could not store its result: ", 0), 0u)
      << error;
  EXPECT_NE(error.find("the server's disk is full"), std::string::npos) << error;
  EXPECT_FALSE(ended.contains("fields")) << ended.dump(2);
  const int64_t iterations = ended.value("iterations", int64_t{0});
  EXPECT_GE(iterations, 2);
  EXPECT_NE(read_text(c.dir() + "/server.log").find("could not be stored"), std::string::npos);

  // Three restarts on the same full directory: the run is listed as it
  // ended and is never started again.
  for (int restart = 1; restart <= 3; ++restart) {
    ASSERT_TRUE(c.restart_server().ok()) << "restart " << restart;
    ASSERT_TRUE(c.wait_for_workers(1).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // time to resume, if it did
    const json r = get_json(c, "/runtimes/" + id);
    EXPECT_EQ(r.value("status", ""), "failed") << "restart " << restart << ": " << r.dump(2);
    EXPECT_EQ(r.value("iterations", int64_t{-1}), iterations) << "restart " << restart;
    EXPECT_FALSE(r.contains("recoveries")) << r.dump(2);
  }
  const std::string log = read_text(c.dir() + "/server.log");
  EXPECT_EQ(count(log, "resuming"), 0u) << log;
  EXPECT_EQ(count(log, "queued " + id), 1u) << log;
}

// A program with host.cpp registered while the server's disk is full is
// refused with 507 and the reason, as any request that cannot be stored
// is; with room again, it registers.
TEST(StorageLoss, AHostProgramRegisteredOnAFullDiskGets507) {
  LocalCluster c;
  SmallTmpfs disk(c.dir() + "/server", 16);
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here: " << disk.why();
  ASSERT_TRUE(c.start(1).ok());
  disk.fill();
  const CommandResult refused = c.load_program(LIZARD_SOURCE_DIR "/examples/logreg");
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_NE(refused.output.find("(HTTP 507)"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("the disk is full: the build could not write "), std::string::npos)
      << refused.output;
  EXPECT_TRUE(c.server_alive());
  fs::remove(c.dir() + "/server/filler");
  EXPECT_FALSE(register_program(c, LIZARD_SOURCE_DIR "/examples/logreg").empty());
}

TEST(StorageLoss, ARemovedStateDirectoryFailsRequestsAndSaysWhy) {
  LocalCluster c;
  ASSERT_TRUE(c.start(1).ok());
  const std::string hash = register_program(c, LIZARD_SOURCE_DIR "/examples/sum");
  ASSERT_FALSE(hash.empty());
  const json body = {{"params", {{"dims", 1}}}, {"dataset", {{"values", {{"values", {1, 2, 3}}}}}}};
  auto first = c.post("/runtime/" + hash + "?wait=1", body.dump());
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(json::parse(first->body).value("status", ""), "done") << first->body;

  const std::string state = c.dir() + "/server";
  fs::remove_all(state);
  auto refused = c.post("/runtime/" + hash + "?wait=1", body.dump());
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->status, 500) << refused->body;
  EXPECT_NE(refused->body.find("the state directory " + state + " was removed or replaced"),
            std::string::npos)
      << refused->body;
  auto up = c.post("/datasets?format=raw", std::string(64, 'x'));
  ASSERT_TRUE(up.ok());
  EXPECT_EQ(up->status, 500) << up->body;
  const CommandResult loaded = c.load_program(LIZARD_SOURCE_DIR "/examples/logreg");
  EXPECT_NE(loaded.exit_code, 0) << loaded.output;
  EXPECT_NE(loaded.output.find("was removed or replaced"), std::string::npos) << loaded.output;
  auto ruok = c.get("/ruok");
  ASSERT_TRUE(ruok.ok());
  EXPECT_EQ(ruok->status, 503) << ruok->body;
  EXPECT_NE(ruok->body.find("cannot store anything"), std::string::npos) << ruok->body;
  EXPECT_EQ(get_json(c, "/runtimes").size(), 1u);  // nothing acknowledged since
  EXPECT_FALSE(fs::exists(state));                 // nor written into a new directory
  const std::string log = read_text(c.dir() + "/server.log");
  EXPECT_NE(log.find("error run refused: the state directory"), std::string::npos) << log;

  // A restart over the lost directory starts afresh, and says so.
  ASSERT_TRUE(c.restart_server().ok());
  EXPECT_NE(read_text(c.dir() + "/server.log").find("is a new state directory"), std::string::npos);
}

}  // namespace
}  // namespace lizard
