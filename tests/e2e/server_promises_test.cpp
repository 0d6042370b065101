// What rest-api.md promises in corners, against real processes: a server
// stopped by SIGTERM answers its waiting `?wait=1` requests with the record
// ("the server is shutting down"), answers or closes the requests that come
// while it stops and exits 0; `?status=` given empty is a 400; a stage
// whose worker never answers fails within the loading deadline, saying so,
// and frees its executors; and dropping a file's kept rows by any name of
// the file drops them, whichever name runs reached it by.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>
#include <vector>

#include "dataset/npy.h"
#include "fake_worker.h"
#include "local_cluster.h"
#include "net/http_client.h"

namespace lizard {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(Shutdown, AWaitingRequestGetsTheRecordSayingTheServerIsShuttingDown) {
  LocalCluster c;
  ASSERT_TRUE(c.start(1, {"--cpu-threads", "1"}).ok());
  const std::string kmeans = register_program(c, LIZARD_SOURCE_DIR "/examples/kmeans");
  ASSERT_FALSE(kmeans.empty());
  const json body = {
      {"params", {{"k", 2}, {"dims", 2}, {"max_iterations", 1000000}, {"threshold", -1}}},
      {"dataset", {{"points", {{"generate", "blobs"}, {"seed", 1}, {"rows", 10000}}}}},
      {"state", {{"centroids", {{0, 0}, {3, 3}}}}}};
  auto waiting = std::async(std::launch::async, [&] {
    return http_request("POST", c.uri() + "/runtime/" + kmeans + "?wait=1", body.dump(),
                        "application/json", 60);
  });
  bool running = false;
  for (int i = 0; i < 500 && !running; ++i) {
    for (const auto& r : get_json(c, "/runtimes"))
      running = running || r.value("status", "") == "running";
    if (!running) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(running);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the run iterates
  kill(c.server_pid(), SIGTERM);
  if (waiting.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    c.stop();  // ends the request
    FAIL() << "the waiting request was not answered within 30 s";
  }
  auto reply = waiting.get();
  ASSERT_TRUE(reply.ok()) << "the connection closed with no answer: " << reply.status().message();
  const json rec = json::parse(reply->body, nullptr, false);
  EXPECT_NE(rec.value("error", "").find("the server is shutting down"), std::string::npos)
      << reply->body;
}

// One HTTP/1.1 answer read off a keep-alive connection: its status, or 0
// when the connection closed (or stalled 10 s) before a whole answer came.
int read_one_answer(int fd, std::string* pending) {
  char buf[4096];
  size_t head_end;
  while ((head_end = pending->find("\r\n\r\n")) == std::string::npos) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return 0;
    pending->append(buf, static_cast<size_t>(n));
  }
  const std::string head = pending->substr(0, head_end);
  size_t length = 0;
  if (auto at = head.find("Content-Length: "); at != std::string::npos)
    length = std::stoul(head.substr(at + 16));
  while (pending->size() < head_end + 4 + length) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return 0;
    pending->append(buf, static_cast<size_t>(n));
  }
  pending->erase(0, head_end + 4 + length);
  return head.size() > 12 ? std::stoi(head.substr(9, 3)) : 0;
}

// Requests that come on open connections while the server stops, ones its
// pool takes (a run's logs) and ones it checks itself (a run request): each
// gets a whole answer, 200 or 503, or its connection ends; none hangs, and
// the server exits with status 0 (a sanitized server exits otherwise when it
// touches freed memory on its way out).
TEST(Shutdown, RequestsArrivingWhileTheServerStopsAreAnsweredAndItExitsCleanly) {
  LocalCluster c;
  ASSERT_TRUE(c.start(1, {"--cpu-threads", "1"}).ok());
  const std::string kmeans = register_program(c, LIZARD_SOURCE_DIR "/examples/kmeans");
  ASSERT_FALSE(kmeans.empty());
  const json body = {
      {"params", {{"k", 2}, {"dims", 2}, {"max_iterations", 3}}},
      {"dataset", {{"points", {{"generate", "blobs"}, {"seed", 1}, {"rows", 1000}}}}},
      {"state", {{"centroids", {{0, 0}, {3, 3}}}}}};
  const std::string id = submit_run(c, kmeans, body);
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(wait_until_finished(c, id, 30).value("status", ""), "done");
  const std::string logs = "GET /api/v1/runs/" + id + "/logs HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::string run = "POST /runtime/" + kmeans + " HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                          std::to_string(body.dump().size()) + "\r\n\r\n" + body.dump();
  constexpr int kConnections = 8;
  std::vector<int> fds;
  for (int i = 0; i < kConnections; ++i) {
    fds.push_back(connect_loopback(c.port()));
    ASSERT_GE(fds.back(), 0);
  }
  std::atomic<bool> go{false};
  std::vector<std::future<std::vector<int>>> answers;
  for (int i = 0; i < kConnections; ++i)
    answers.push_back(std::async(std::launch::async, [&, fd = fds[i], i] {
      std::vector<int> statuses;
      std::string pending;
      const std::string& request = i % 2 == 0 ? logs : run;
      while (!go) std::this_thread::yield();
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (std::chrono::steady_clock::now() < until) {
        if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size()))
          break;
        const int status = read_one_answer(fd, &pending);
        if (status == 0) break;
        statuses.push_back(status);
      }
      return statuses;
    }));
  go = true;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(c.stop_server(30), 0) << read_file(c.dir() + "/server.log").substr(0, 4000);
  for (int i = 0; i < kConnections; ++i) {
    ASSERT_EQ(answers[i].wait_for(std::chrono::seconds(30)), std::future_status::ready)
        << "a connection hung after the server stopped";
    const std::vector<int> statuses = answers[i].get();
    EXPECT_FALSE(statuses.empty()) << "connection " << i << " got no answer before the stop";
    for (int status : statuses)
      EXPECT_TRUE(status == 200 || status == 201 || status == 202 || status == 503)
          << "connection " << i << ": " << status;
    close(fds[i]);
  }
}

TEST(RunList, AStatusFilterGivenEmptyIsRefused) {
  LocalCluster c;
  ASSERT_TRUE(c.start(0).ok());
  for (const std::string path : {"/runtimes?status=", "/api/v1/runs?status="}) {
    auto r = c.get(path);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 400) << path << " -> " << r->body;
    EXPECT_NE(r->body.find("status must be one of"), std::string::npos) << r->body;
  }
  auto all = c.get("/runtimes");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->status, 200);
}

void write_values(const std::string& path, int64_t rows, double value) {
  std::vector<double> v(static_cast<size_t>(rows) * 2, value);
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      << npy_bytes(DType::kFloat64, {rows, 2}, v.data());
}

// A worker that never answers stage_rows: the stage fails once the loading
// deadline passes, names the worker, leaves it out of placement, and gives
// its executor back.
TEST(StageDeadline, AWorkerThatNeverAnswersFailsTheStageWithinTheDeadline) {
  LocalCluster c;
  ASSERT_TRUE(c.start(0, {}, {"--load-timeout", "2"}).ok());
  FakeWorker silent(c.port(), "silent-node", {fake_cpu()});
  ASSERT_TRUE(c.wait_for_workers(1).ok());
  const std::string path = c.dir() + "/values.npy";
  write_values(path, 1000, 1.0);
  const std::string sum = register_program(c, LIZARD_SOURCE_DIR "/examples/sum");
  ASSERT_FALSE(sum.empty());
  auto staging = std::async(std::launch::async, [&] {
    return http_request("POST", c.uri() + "/datasets/stage",
                        json{{"path", path}, {"program", sum}}.dump());
  });
  if (staging.wait_for(std::chrono::seconds(15)) != std::future_status::ready) {
    c.stop();  // ends the request
    FAIL() << "POST /datasets/stage was not answered within 15 s";
  }
  auto r = staging.get();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, 503) << r->body;
  EXPECT_NE(r->body.find("did not stage the rows within 2 s"), std::string::npos) << r->body;
  const json workers = get_json(c, "/clients");
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_NE(workers[0].value("unresponsive", "").find("missed the stage deadline"),
            std::string::npos)
      << workers.dump();
  EXPECT_TRUE(workers[0]["hardware"]["executors"][0]["run"].is_null()) << workers.dump();
}

// Kept rows of a file reached by three names: the file's, a symlink's, and
// a path that is not canonical.  Each round a run under one name keeps the
// rows, a run under the next finds them kept, and a drop under the third
// drops them: the run after reads the file again.
TEST(KeptRowsDrop, AnyNameOfTheFileDropsItsKeptRows) {
  LocalCluster c;
  ASSERT_TRUE(c.start(1, {"--cpu-executors", "1"}).ok());
  const std::string sum = register_program(c, LIZARD_SOURCE_DIR "/examples/sum");
  ASSERT_FALSE(sum.empty());
  constexpr int64_t kRows = 4000;
  const uint64_t bytes = kRows * 2 * sizeof(double);
  const std::string real = c.dir() + "/values.npy";
  const std::string link = c.dir() + "/link.npy";
  fs::create_directories(c.dir() + "/sub");
  const std::string dotted = c.dir() + "/sub/../values.npy";
  write_values(real, kRows, 1.0);
  fs::create_symlink(real, link);
  auto run = [&](const std::string& path) {
    const json body = {{"params", {{"dims", 2}}}, {"dataset", {{"values", {{"path", path}}}}}};
    auto r = c.post("/runtime/" + sum + "?wait=1", body.dump());
    return r.ok() ? json::parse(r->body, nullptr, false) : json();
  };
  auto kept = [&] { return get_json(c, "/datasets")["kept"]; };
  const std::vector<std::string> names = {link, real, dotted};
  for (size_t round = 0; round < names.size(); ++round) {
    const std::string& first = names[round];
    const std::string& second = names[(round + 1) % 3];
    const std::string& dropped_by = names[(round + 2) % 3];
    const std::string where = "used as " + first + " then " + second + ", dropped as " + dropped_by;
    const json a = run(first);
    ASSERT_EQ(a.value("status", ""), "done") << where << ": " << a.dump();
    EXPECT_EQ(a["phases"]["file_bytes_read"], bytes) << where;
    const json b = run(second);
    ASSERT_EQ(b.value("status", ""), "done") << where << ": " << b.dump();
    EXPECT_EQ(b["phases"]["file_bytes_kept"], bytes) << where;
    for (int i = 0; i < 100 && kept().empty(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_FALSE(kept().empty()) << where;
    auto dropped = c.post("/datasets/drop", json{{"source", dropped_by}}.dump());
    ASSERT_TRUE(dropped.ok());
    ASSERT_EQ(dropped->status, 200) << dropped->body;
    for (int i = 0; i < 100 && !kept().empty(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_TRUE(kept().empty()) << where << ": " << kept().dump();
    const json after = run(second);
    ASSERT_EQ(after.value("status", ""), "done") << where << ": " << after.dump();
    EXPECT_EQ(after["phases"]["file_bytes_read"], bytes) << where << ": read again";
    // Nothing kept for the next round: once the listing shows the rows the
    // last run kept (it may lag the run), they are dropped, and gone.
    for (int i = 0; i < 100 && kept().empty(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    (void)c.post("/datasets/drop", json{{"source", real}}.dump());
    for (int i = 0; i < 100 && !kept().empty(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_TRUE(kept().empty()) << where << ": " << kept().dump();
  }
}

}  // namespace
}  // namespace lizard
