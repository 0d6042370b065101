// How `lizard run --dataset FILE` sends a file: by its path when the server
// and every worker read that same file there (POST /datasets/probe), so the
// workers read their rows at file speed and keep them; uploaded when a
// worker cannot read it there; and as --shared-path and --upload say.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli_process.h"
#include "dataset/file_identity.h"
#include "local_cluster.h"

namespace lizard {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// 1,000 rows of (1, 2): sums (1000, 2000).
std::string write_csv(const std::string& dir) {
  fs::create_directories(dir);
  const std::string path = dir + "/values.csv";
  std::ofstream out(path);
  for (int i = 0; i < 1000; ++i) out << "1,2\n";
  return path;
}

std::vector<std::string> sum_args(const std::string& file) {
  return {"run", "examples/sum", "--param", "dims=2", "--dataset", "values=" + file, "--json"};
}

json record_of(const CliResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.err;
  json rec = json::parse(r.out, nullptr, false);
  EXPECT_TRUE(rec.is_object()) << r.out;
  if (!rec.is_object()) return json::object();
  EXPECT_EQ(rec["result"]["aggregate"]["sums"], json::parse("[1000.0, 2000.0]")) << rec.dump(2);
  return rec;
}

json probe(const LocalCluster& c, const json& body, int* status) {
  auto r = c.post("/datasets/probe", body.dump());
  EXPECT_TRUE(r.ok());
  if (!r.ok()) return json();
  *status = r->status;
  return json::parse(r->body, nullptr, false);
}

TEST(DatasetDelivery, AFileEveryWorkerReadsGoesByPath) {
  LocalCluster c;
  ASSERT_TRUE(c.start(2).ok());
  const std::string file = write_csv(c.dir() + "/data");
  CliResult r = run_cli(c, sum_args(file));
  json rec = record_of(r);
  EXPECT_NE(r.err.find("sending " + file +
                       " by path for dataset field 'values': the server and its 2 worker(s) "
                       "read this same file"),
            std::string::npos)
      << r.err;
  ASSERT_EQ(rec["files"].size(), 1u) << rec.dump(2);  // read by path: its version pinned
  EXPECT_EQ(rec["files"][0]["path"], file);
  EXPECT_EQ(get_json(c, "/datasets")["uploads"], json::array());

  // --upload sends it all the same.
  std::vector<std::string> upload = sum_args(file);
  upload.push_back("--upload");
  CliResult u = run_cli(c, upload);
  json uploaded = record_of(u);
  EXPECT_NE(u.err.find("uploading " + file + " for dataset field 'values'"), std::string::npos)
      << u.err;
  EXPECT_FALSE(uploaded.contains("files")) << uploaded.dump(2);
}

// A worker confined to other data roots cannot read the file: it is uploaded,
// and the CLI says why.
TEST(DatasetDelivery, AFileAWorkerCannotReadIsUploaded) {
  LocalCluster c;
  const std::string elsewhere = ::testing::TempDir() + "/lizard-delivery-elsewhere";
  fs::create_directories(elsewhere);
  ASSERT_TRUE(c.start(1, {"--data-root", elsewhere}).ok());
  const std::string file = write_csv(c.dir() + "/data");
  CliResult r = run_cli(c, sum_args(file));
  json rec = record_of(r);
  EXPECT_NE(r.err.find(file + " goes as an upload: worker "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("uploading " + file), std::string::npos) << r.err;
  EXPECT_FALSE(rec.contains("files")) << rec.dump(2);

  int status = 0;
  json verdict = probe(c, {{"path", file}}, &status);
  EXPECT_EQ(status, 200) << verdict.dump();
  EXPECT_EQ(verdict["shared"], false) << verdict.dump();
  ASSERT_EQ(verdict["workers"].size(), 1u) << verdict.dump();
  EXPECT_EQ(verdict["workers"][0]["sees"], false);
  fs::remove_all(elsewhere);
}

// The server compares the version the client sees with its own and its
// workers'; a malformed body or a file it cannot read is an error.
TEST(DatasetDelivery, TheProbeComparesTheClientsVersionAndRefusesBadBodies) {
  LocalCluster c;
  ASSERT_TRUE(c.start(1).ok());
  const std::string file = write_csv(c.dir() + "/data");
  const FileIdentity mine = FileIdentity::of(file).value();
  const json identity = {{"device", mine.device},
                         {"inode", mine.inode},
                         {"size", mine.size},
                         {"mtime_ns", mine.mtime_ns},
                         {"ctime_ns", mine.ctime_ns}};
  int status = 0;
  json same = probe(c, {{"path", file}, {"identity", identity}}, &status);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(same["shared"], true) << same.dump();
  json other_identity = identity;
  other_identity["size"] = mine.size + 1;  // another machine's file at that path
  json other = probe(c, {{"path", file}, {"identity", other_identity}}, &status);
  EXPECT_EQ(other["shared"], false) << other.dump();
  EXPECT_NE(other.value("why", "").find("the server sees another file at this path"),
            std::string::npos)
      << other.dump();

  json missing = probe(c, {{"path", c.dir() + "/no-such-file"}}, &status);
  EXPECT_EQ(status, 400);
  EXPECT_NE(missing.value("error", "").find("No such file"), std::string::npos) << missing.dump();
  json bad = probe(c, {{"file", file}}, &status);
  EXPECT_EQ(status, 400);
  EXPECT_NE(bad.value("error", "").find("the body must be {\"path\": PATH}"), std::string::npos)
      << bad.dump();
}

}  // namespace
}  // namespace lizard
