// The server killed with SIGKILL in the middle of runs: after it restarts on
// the same state directory, a running run resumes (from its last checkpoint,
// or from the start where kernels keep per-row values) and ends with the
// answer of an undisturbed run (bit for bit on the CPU backend); a queued
// run stays queued and then runs; uploads survive.  Also: a full disk answers 507 and harms
// nothing, and a program with unfinished runs cannot be deleted.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "dataset/npy.h"
#include "local_cluster.h"

namespace lizard {
namespace {

using nlohmann::json;

// Uploads `bytes` with POST /datasets; the upload's id.
std::string upload(const LocalCluster& c, const std::string& bytes) {
  auto r = http_request("POST", c.uri() + "/datasets", bytes, "application/octet-stream", 120);
  EXPECT_TRUE(r.ok() && r->status == 201) << (r.ok() ? r->body : r.status().message());
  return r.ok() ? json::parse(r->body).value("id", "") : "";
}

// Waits until the run has completed `n` iterations (or has finished).
void wait_for_iterations(const LocalCluster& c, const std::string& id, int64_t n) {
  for (int i = 0; i < 6000; ++i) {
    json r = get_json(c, "/runtimes/" + id);
    if (r.value("iterations", 0) >= n || r.value("status", "") == "done") return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::string field(const LocalCluster& c, const std::string& id, const std::string& name) {
  auto r = c.get("/runtimes/" + id + "/fields/" + name + ".npy");
  EXPECT_TRUE(r.ok() && r->status == 200) << id << " " << name;
  return r.ok() ? r->body : "";
}

// The CUDA backend's reductions add in the order their atomics land, so two
// undisturbed runs on a GPU agree to float rounding and not bit for bit; on
// the CPU backend they agree exactly, and there the comparisons are exact.
bool exact_backend() {
  const char* b = std::getenv("LIZARD_E2E_BACKEND");
  return !(b && std::string(b) == "cuda");
}

bool close_to(double got, double want) {
  return std::abs(got - want) <= 1e-4 * std::max(1.0, std::abs(want));
}

void expect_same_values(const json& got, const json& want, const std::string& where) {
  if (exact_backend() || !(got.is_structured() || got.is_number_float())) {
    EXPECT_EQ(got, want) << where;
  } else if (got.is_number()) {
    EXPECT_TRUE(want.is_number() && close_to(got.get<double>(), want.get<double>()))
        << where << ": " << got << " against " << want;
  } else if (got.type() != want.type() || got.size() != want.size()) {
    ADD_FAILURE() << where << ": " << got << " against " << want;
  } else if (got.is_array()) {
    for (size_t i = 0; i < got.size(); ++i)
      expect_same_values(got[i], want[i], where + "/" + std::to_string(i));
  } else {
    for (const auto& [k, v] : got.items())
      expect_same_values(v, want.contains(k) ? want[k] : json(), where + "/" + k);
  }
}

// Two .npy files hold the same array: the same bytes, or on a GPU float32
// elements within rounding (everything else still exact).
void expect_same_field(const std::string& got, const std::string& want, const std::string& name) {
  auto length = npy_header_length(want);
  auto header = length.ok() ? parse_npy_header(want.substr(0, *length)) : length.status();
  if (exact_backend() || !header.ok() || header->dtype != DType::kFloat32 ||
      got.size() != want.size() || got.compare(0, *length, want, 0, *length) != 0) {
    EXPECT_EQ(got, want) << name;
    return;
  }
  for (size_t at = *length; at + sizeof(float) <= want.size(); at += sizeof(float)) {
    float g, w;
    std::memcpy(&g, got.data() + at, sizeof g);
    std::memcpy(&w, want.data() + at, sizeof w);
    EXPECT_TRUE(close_to(g, w)) << name << " element " << (at - *length) / sizeof(float) << ": "
                                << g << " against " << w;
  }
}

class ServerRestart : public ::testing::Test {
 public:
  void SetUp() override { ASSERT_TRUE(c_.start(workers(), {"--cpu-threads", "1"}).ok()); }
  virtual int workers() const { return 2; }

  std::string submit(const std::string& hash, const json& body) {
    auto r = c_.post("/runtime/" + hash, body.dump());
    EXPECT_TRUE(r.ok() && r->status == 202) << (r.ok() ? r->body : r.status().message());
    return r.ok() ? json::parse(r->body).value("runtime_id", "") : "";
  }

  // Runs `body` undisturbed, then twice more (the second queued behind the
  // first), kills the server once the first has made `kill_after`
  // iterations, and checks both end as the undisturbed run did.  Returns the
  // interrupted run's record.
  json interrupt_and_compare(const std::string& hash, const json& body, int64_t kill_after,
                             const std::vector<std::string>& fields) {
    json undisturbed = wait_until_finished(c_, submit(hash, body), 240);
    EXPECT_EQ(undisturbed["status"], "done") << undisturbed.dump(2);
    const std::string running = submit(hash, body), queued = submit(hash, body);
    wait_for_iterations(c_, running, kill_after);
    EXPECT_EQ(get_json(c_, "/runtimes/" + running).value("status", ""), "running")
        << "the run ended before the server was killed: make it longer";
    EXPECT_TRUE(c_.restart_server().ok());
    EXPECT_EQ(get_json(c_, "/runtimes/" + queued).value("status", ""), "queued");
    json rec = wait_until_finished(c_, running, 240);
    EXPECT_EQ(rec["status"], "done") << rec.dump(2);
    json next = wait_until_finished(c_, queued, 240);
    EXPECT_EQ(next["status"], "done") << next.dump(2);
    for (const json* r : {&rec, &next}) {
      expect_same_values((*r)["result"], undisturbed["result"], (*r)["runtime_id"]);
      EXPECT_EQ((*r)["iterations"], undisturbed["iterations"]);
      for (const auto& f : fields)
        expect_same_field(field(c_, (*r)["runtime_id"], f),
                          field(c_, undisturbed["runtime_id"].get<std::string>(), f), f);
    }
    EXPECT_TRUE(rec.contains("recoveries")) << rec.dump(2);
    return rec;
  }

 protected:
  LocalCluster c_;
};

// k-means keeps per-row labels: the run starts over after the restart.
TEST_F(ServerRestart, KmeansRunStartsOverAndEndsWithTheUndisturbedAnswer) {
  const std::string hash = register_program(c_, LIZARD_SOURCE_DIR "/examples/kmeans");
  ASSERT_FALSE(hash.empty());
  constexpr int kK = 8, kDims = 4;
  const int64_t n = 600000;
  std::mt19937 rng(11);
  std::normal_distribution<float> noise(0.f, 0.5f);
  std::vector<float> pts(static_cast<size_t>(n) * kDims);
  for (int64_t i = 0; i < n; ++i)
    for (int j = 0; j < kDims; ++j)
      pts[static_cast<size_t>(i * kDims + j)] =
          10.f * ((i % kK >> j) & 1) + 3.f * (i % kK) + noise(rng);
  const std::string id = upload(c_, npy_bytes(DType::kFloat32, {n, kDims}, pts.data()));
  ASSERT_FALSE(id.empty());
  json body = {
      {"params", {{"k", kK}, {"dims", kDims}, {"max_iterations", 40}, {"threshold", -1}}},
      {"dataset", {{"points", {{"upload", id}}}}},
      {"state", {{"centroids", std::vector<float>(pts.begin(), pts.begin() + kK * kDims)}}}};
  json rec = interrupt_and_compare(hash, body, 3, {"labels", "centroids"});
  EXPECT_EQ(rec["recoveries"].back()["resumed_at_iteration"], 0) << rec.dump(2);
  EXPECT_EQ(get_json(c_, "/datasets/" + id).value("id", ""), id);  // the upload survived
}

// Logistic regression keeps nothing per row: the run resumes at the
// iteration after its last checkpoint.
void logreg_resumes_from_its_checkpoint(ServerRestart* t, LocalCluster& c) {
  const std::string hash = register_program(c, LIZARD_SOURCE_DIR "/examples/logreg");
  ASSERT_FALSE(hash.empty());
  constexpr int kDims = 4;
  const int64_t n = 1000000;
  std::mt19937 rng(5);
  std::normal_distribution<float> g(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(n) * kDims), y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    float s = 0;
    for (int j = 0; j < kDims; ++j) s += (j + 1) * (x[static_cast<size_t>(i * kDims + j)] = g(rng));
    y[static_cast<size_t>(i)] = s + g(rng) > 0 ? 1.f : 0.f;
  }
  const std::string xs = upload(c, npy_bytes(DType::kFloat32, {n, kDims}, x.data()));
  const std::string ys = upload(c, npy_bytes(DType::kFloat32, {n}, y.data()));
  json body = {{"params", {{"dims", kDims}, {"lr", 0.5}, {"tol", -1}, {"max_iterations", 60}}},
               {"dataset", {{"x", {{"upload", xs}}}, {"y", {{"upload", ys}}}}}};
  json rec = t->interrupt_and_compare(hash, body, 4, {"w"});
  // Not from the start: a run's first checkpoint is written at once, later
  // ones at most one every 100 ms (run_store_writer.h), so the run resumes
  // at most that much of its work back.
  EXPECT_GE(rec["recoveries"].back()["resumed_at_iteration"].get<int64_t>(), 1) << rec.dump(2);
  EXPECT_EQ(rec["recoveries"].back()["reason"], "the server restarted");
}

TEST_F(ServerRestart, LogregRunResumesFromItsCheckpoint) {
  logreg_resumes_from_its_checkpoint(this, c_);
}

// On one worker the worker drives the loop; the server checkpoints each
// iteration it reports.
class ServerRestartOneWorker : public ServerRestart {
 protected:
  int workers() const override { return 1; }
};

TEST_F(ServerRestartOneWorker, LogregRunResumesFromItsCheckpoint) {
  logreg_resumes_from_its_checkpoint(this, c_);
}

// A full disk fails the request that met it with 507 and a clear message;
// the store stays whole and takes writes again once there is room.
TEST(ServerStorage, AFullDiskAnswers507AndHarmsNothing) {
  LocalCluster c;
  const std::string flag = c.dir() + "/disk-full";
  ::setenv("LIZARD_TEST_DISK_FULL_FILE", flag.c_str(), 1);
  const Status started = c.start(1);
  ::unsetenv("LIZARD_TEST_DISK_FULL_FILE");
  ASSERT_TRUE(started.ok()) << started.message();
  const std::string hash = register_program(c, LIZARD_SOURCE_DIR "/examples/sum");
  ASSERT_FALSE(hash.empty());
  const json body = {{"params", {{"dims", 1}}}, {"dataset", {{"values", {{"values", {1, 2, 3}}}}}}};
  const double values[] = {1, 2, 3};
  const std::string kept = upload(c, npy_bytes(DType::kFloat64, {3, 1}, values));
  const json kept_meta = get_json(c, "/datasets/" + kept);
  std::ofstream(flag) << "";
  auto full = c.post("/runtime/" + hash, body.dump());
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->status, 507) << full->body;
  EXPECT_NE(json::parse(full->body).value("error", "").find("disk is full"), std::string::npos)
      << full->body;
  // An upload fails as its body is written, whether small or many chunks long.
  for (size_t size : {size_t{16}, size_t{8} << 20}) {
    auto up = http_request("POST", c.uri() + "/datasets?format=raw", std::string(size, 'x'),
                           "application/octet-stream", 60);
    ASSERT_TRUE(up.ok()) << up.status().message();
    EXPECT_EQ(up->status, 507) << up->body;
    const json answer = json::parse(up->body, nullptr, false);
    ASSERT_TRUE(answer.is_object()) << up->body;
    EXPECT_EQ(answer.value("error", "").rfind("the server's disk is full: upload u", 0), 0u)
        << up->body;
  }
  EXPECT_EQ(get_json(c, "/runtimes").size(), 0u);
  EXPECT_EQ(get_json(c, "/datasets")["uploads"].size(), 1u);
  EXPECT_EQ(get_json(c, "/datasets/" + kept), kept_meta);
  size_t files = 0;  // the kept upload's data and description; no partial uploads
  for (const auto& e : std::filesystem::directory_iterator(c.dir() + "/server/datasets")) {
    EXPECT_EQ(e.path().stem().string(), kept) << e.path();
    ++files;
  }
  EXPECT_EQ(files, 2u);
  std::remove(flag.c_str());
  auto ok = c.post("/runtime/" + hash + "?wait=1", body.dump());
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(json::parse(ok->body).value("status", ""), "done") << ok->body;
  auto room = http_request("POST", c.uri() + "/datasets?format=raw", std::string(8 << 20, 'x'),
                           "application/octet-stream", 60);
  ASSERT_TRUE(room.ok()) << room.status().message();
  EXPECT_EQ(room->status, 201) << room->body;
  ASSERT_TRUE(c.restart_server().ok());
  EXPECT_EQ(get_json(c, "/runtimes").size(), 1u);
  EXPECT_EQ(get_json(c, "/datasets")["uploads"].size(), 2u);
}

// Not a simulated failure: the server's SQLite database cannot grow
// (LIZARD_TEST_SQLITE_MAX_PAGES caps it where it stands), so SQLite itself
// answers SQLITE_FULL.  A run request too large for the room left is answered
// 507; the server stays up and what it stored before stays whole.
TEST(ServerStorage, SqliteOutOfRoomAnswers507AndHarmsNothing) {
  LocalCluster c;
  ASSERT_TRUE(c.start(1).ok());
  const std::string hash = register_program(c, LIZARD_SOURCE_DIR "/examples/sum");
  ASSERT_FALSE(hash.empty());
  const json small = {{"params", {{"dims", 1}}},
                      {"dataset", {{"values", {{"values", {1, 2, 3}}}}}}};
  auto first = c.post("/runtime/" + hash + "?wait=1", small.dump());
  ASSERT_TRUE(first.ok());
  const json done = json::parse(first->body);
  ASSERT_EQ(done.value("status", ""), "done") << first->body;
  if (!std::filesystem::exists(c.dir() + "/server/runs.sqlite3"))
    GTEST_SKIP() << "this lizard keeps run records in files (built without SQLite)";
  std::vector<double> many(60000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<double>(i) + 0.5;
  const json large = {{"params", {{"dims", 1}}}, {"dataset", {{"values", {{"values", many}}}}}};

  ::setenv("LIZARD_TEST_SQLITE_MAX_PAGES", "1", 1);
  const Status restarted = c.restart_server();
  ::unsetenv("LIZARD_TEST_SQLITE_MAX_PAGES");
  ASSERT_TRUE(restarted.ok()) << restarted.message();
  auto full = c.post("/runtime/" + hash, large.dump());
  ASSERT_TRUE(full.ok()) << full.status().message();
  EXPECT_EQ(full->status, 507) << full->body;
  const json answer = json::parse(full->body, nullptr, false);
  ASSERT_TRUE(answer.is_object()) << full->body;
  EXPECT_NE(answer.value("error", "").find("the server's disk is full: the request of run r"),
            std::string::npos)
      << full->body;
  EXPECT_TRUE(c.server_alive());
  json runs = get_json(c, "/runtimes");
  ASSERT_EQ(runs.size(), 1u) << runs.dump(2);
  EXPECT_EQ(get_json(c, "/runtimes/" + done["runtime_id"].get<std::string>())["status"], "done");

  ASSERT_TRUE(c.restart_server().ok());  // room again
  auto ok = c.post("/runtime/" + hash + "?wait=1", large.dump());
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(json::parse(ok->body).value("status", ""), "done") << ok->body;
  EXPECT_EQ(get_json(c, "/runtimes").size(), 2u);
  EXPECT_EQ(get_json(c, "/runtimes/" + done["runtime_id"].get<std::string>())["status"], "done");
}

// --keep-runs: at start, finished runs beyond the newest N go, with their
// fields and the uploads only they named.
TEST(ServerStorage, KeepRunsPrunesOldRunsAndTheUploadsOnlyTheyNamed) {
  LocalCluster c;
  ASSERT_TRUE(c.start(1, {}, {"--keep-runs", "1"}).ok());
  const std::string hash = register_program(c, LIZARD_SOURCE_DIR "/examples/sum");
  ASSERT_FALSE(hash.empty());
  const double values[] = {1, 2, 3};
  const std::string only_old = upload(c, npy_bytes(DType::kFloat64, {3, 1}, values));
  const std::string shared = upload(c, npy_bytes(DType::kFloat64, {3, 1}, values));
  const std::string unused = upload(c, npy_bytes(DType::kFloat64, {3, 1}, values));
  std::vector<std::string> ids;
  for (const std::string& u : {only_old, shared, shared}) {
    json body = {{"params", {{"dims", 1}}}, {"dataset", {{"values", {{"upload", u}}}}}};
    auto r = c.post("/runtime/" + hash + "?wait=1", body.dump());
    ASSERT_TRUE(r.ok());
    json rec = json::parse(r->body);
    ASSERT_EQ(rec["status"], "done") << r->body;
    ids.push_back(rec["runtime_id"]);
  }
  ASSERT_TRUE(c.restart_server().ok());
  json runs = get_json(c, "/runtimes");
  ASSERT_EQ(runs.size(), 1u) << runs.dump(2);
  EXPECT_EQ(runs[0]["runtime_id"], ids[2]);
  EXPECT_EQ(c.get("/runtimes/" + ids[0])->status, 404);
  EXPECT_EQ(c.get("/runtimes/" + ids[0] + "/fields/sums.npy")->status, 404);
  EXPECT_EQ(c.get("/runtimes/" + ids[2] + "/fields/sums.npy")->status, 200);
  EXPECT_EQ(c.get("/datasets/" + only_old)->status, 404);  // only pruned runs named it
  EXPECT_EQ(c.get("/datasets/" + shared)->status, 200);    // a kept run names it
  EXPECT_EQ(c.get("/datasets/" + unused)->status, 200);    // no run ever named it
}

// DELETE /programs/<hash>: refused while a run of it is queued or running.
TEST(ServerPrograms, DeleteRefusesWhileRunsUseTheProgram) {
  LocalCluster c;
  ASSERT_TRUE(c.start(1).ok());
  const std::string hash = register_program(c, LIZARD_SOURCE_DIR "/examples/anneal");
  ASSERT_FALSE(hash.empty());
  std::vector<uint64_t> seeds(20000);
  for (size_t i = 0; i < seeds.size(); ++i) seeds[i] = i + 1;
  json body = {{"params", {{"steps", 2000}, {"max_iterations", 50}}},
               {"dataset", {{"seed", {{"values", seeds}}}}}};
  auto r = c.post("/runtime/" + hash, body.dump());
  ASSERT_TRUE(r.ok() && r->status == 202);
  const std::string id = json::parse(r->body).value("runtime_id", "");
  auto refused = http_request("DELETE", c.uri() + "/programs/" + hash, "", "", 30);
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->status, 409) << refused->body;
  EXPECT_EQ(get_json(c, "/programs").size(), 1u);
  (void)http_request("DELETE", c.uri() + "/runtimes/" + id, "", "", 30);
  wait_until_finished(c, id, 120);
  auto deleted = http_request("DELETE", c.uri() + "/programs/" + hash, "", "", 30);
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(deleted->status, 200) << deleted->body;
  EXPECT_EQ(get_json(c, "/programs").size(), 0u);
  EXPECT_EQ(http_request("DELETE", c.uri() + "/programs/" + hash, "", "", 30)->status, 404);
  ASSERT_TRUE(c.restart_server().ok());  // and it stays deleted
  EXPECT_EQ(get_json(c, "/programs").size(), 0u);
}

}  // namespace
}  // namespace lizard
