// Bad input against real daemons: malformed HTTP, unknown methods and HEAD,
// requests whose sizes pass the limits, dataset paths outside the data
// roots, the default listen address, and runs that lose their only worker.
// Every test ends by checking that the daemons still serve: GET /clients
// answers and a normal run ends done.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "dataset/npy.h"
#include "local_cluster.h"

extern char** environ;

namespace lizard {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string status_line(const std::string& answer) {
  return answer.substr(0, answer.find("\r\n"));
}
std::string body_of(const std::string& answer) {
  const size_t at = answer.find("\r\n\r\n");
  return at == std::string::npos ? "" : answer.substr(at + 4);
}
std::string header_of(const std::string& answer, const std::string& name) {
  const std::string head = answer.substr(0, answer.find("\r\n\r\n"));
  const size_t at = head.find("\r\n" + name + ": ");
  if (at == std::string::npos) return "";
  const size_t from = at + name.size() + 4;
  return head.substr(from, head.find("\r\n", from) - from);
}

// One server and one CPU worker for the suite, both confined to data/.
class Hardening : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    c_ = new LocalCluster();
    data_ = c_->dir() + "/data";
    fs::create_directories(data_);
    const std::vector<std::string> roots = {"--data-root", data_};
    Status st = c_->start(1, roots, roots);
    ASSERT_TRUE(st.ok()) << st.message();
    sum_ = register_program(*c_, LIZARD_SOURCE_DIR "/examples/sum");
    ASSERT_FALSE(sum_.empty());
  }
  static void TearDownTestSuite() {
    delete c_;
    c_ = nullptr;
  }
  // What every test checks last: the daemons are up and serve a run.
  void TearDown() override { expect_daemons_up(*c_, sum_); }

 public:
  static void expect_daemons_up(const LocalCluster& c, const std::string& sum) {
    EXPECT_TRUE(c.server_alive()) << "the server died";
    auto clients = c.get("/clients");
    ASSERT_TRUE(clients.ok()) << clients.status().message();
    EXPECT_EQ(clients->status, 200);
    EXPECT_EQ(json::parse(clients->body).size(), 1u) << clients->body;
    auto run = c.post(
        "/runtime/" + sum + "?wait=1",
        json{{"params", {{"dims", 1}}}, {"dataset", {{"values", {{"values", {1, 2, 3}}}}}}}.dump());
    ASSERT_TRUE(run.ok()) << run.status().message();
    json rec = json::parse(run->body);
    EXPECT_EQ(rec["status"], "done") << run->body;
    EXPECT_EQ(rec["result"]["aggregate"]["sums"][0], 6.0) << run->body;
  }

 protected:
  static LocalCluster* c_;
  static std::string data_, sum_;
};
LocalCluster* Hardening::c_ = nullptr;
std::string Hardening::data_, Hardening::sum_;

TEST_F(Hardening, MalformedRequestsGet400WithAJsonError) {
  const std::vector<std::string> bad = {
      "GARBAGE\r\n\r\n",
      std::string("GET /ru\0ok HTTP/1.1\r\nHost: x\r\n\r\n", 33),
      "GET / HTTP/7.x\r\nHost: x\r\n\r\n",
      "POST /programs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
      "chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
      "GET /ruok HTTP/1.1\r\nHost: x\r\nBad Header Name: 1\r\n\r\n",
  };
  for (const auto& req : bad) {
    const std::string answer = raw_exchange(c_->port(), req);
    EXPECT_EQ(status_line(answer), "HTTP/1.1 400 Bad Request") << answer;
    json body = json::parse(body_of(answer), nullptr, false);
    ASSERT_TRUE(body.is_object()) << answer;
    EXPECT_NE(body.value("error", "").find("malformed HTTP request"), std::string::npos) << answer;
  }
  // An oversized header is refused the same way (431, JSON).
  const std::string big = raw_exchange(c_->port(), "GET /ruok HTTP/1.1\r\nHost: x\r\nX-Big: " +
                                                       std::string(20000, 'y') + "\r\n\r\n");
  EXPECT_EQ(status_line(big), "HTTP/1.1 431 Request Header Fields Too Large") << big.substr(0, 200);
  EXPECT_TRUE(json::parse(body_of(big), nullptr, false).contains("error"));
}

TEST_F(Hardening, UnknownMethodsAreRefusedAndHeadAnswersLikeGet) {
  const std::string trace =
      raw_exchange(c_->port(), "TRACE / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status_line(trace), "HTTP/1.1 405 Method Not Allowed") << trace;
  EXPECT_NE(json::parse(body_of(trace)).value("error", "").find("TRACE"), std::string::npos);
  const std::string odd =
      raw_exchange(c_->port(), "BREW /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status_line(odd), "HTTP/1.1 501 Not Implemented") << odd;
  EXPECT_TRUE(json::parse(body_of(odd), nullptr, false).contains("error")) << odd;

  for (const std::string path : {"/clients", "/programs", "/runtimes", "/ruok", "/datasets"}) {
    auto get = c_->get(path);
    ASSERT_TRUE(get.ok());
    const std::string head = raw_exchange(
        c_->port(), "HEAD " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(status_line(head), "HTTP/1.1 200 OK") << head;
    EXPECT_EQ(header_of(head, "Content-Length"), std::to_string(get->body.size())) << head;
    EXPECT_EQ(body_of(head), "") << path;
  }
  const std::string missing = raw_exchange(
      c_->port(), "HEAD /runtimes/r999 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status_line(missing), "HTTP/1.1 404 Not Found") << missing;
  EXPECT_EQ(body_of(missing), "");
}

TEST_F(Hardening, DeeplyNestedBodiesAreRefusedAtOnce) {
  const int depth = 100000;
  const std::string body = R"({"params": {"dims": 1}, "dataset": {"values": {"values": )" +
                           std::string(depth, '[') + "1" + std::string(depth, ']') + "}}}";
  const auto t0 = Clock::now();
  auto r = c_->post("/runtime/" + sum_, body);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_NE(r->body.find("levels deep"), std::string::npos) << r->body;
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(2));
  auto program = c_->post("/programs", std::string(depth, '[') + std::string(depth, ']'));
  ASSERT_TRUE(program.ok());
  EXPECT_EQ(program->status, 400) << program->body;
}

TEST_F(Hardening, SizesTheParamsImplyAreCheckedBeforeAllocating) {
  const auto t0 = Clock::now();
  auto r = c_->post("/runtime/" + sum_, json{{"params", {{"dims", 2147483647}}},
                                             {"dataset", {{"values", {{"values", {{1.0}}}}}}}}
                                            .dump());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, 413) << r->body;
  EXPECT_NE(r->body.find("--max-state-bytes"), std::string::npos) << r->body;
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(2));

  // A field of constant shape that could never fit is refused at registration.
  json bundle = {{"config", R"(
sources: {cuda: kernel.cu}
dataset: {x: {type: float32, shape: [rows]}}
aggregate: {big: {type: float32, shape: [100000000000], reduce: sum}}
iterate: [step]
)"},
                 {"sources", {{"kernel.cu", "#include \"lizard_program.h\"\n"}}}};
  auto reg = c_->post("/programs", bundle.dump());
  ASSERT_TRUE(reg.ok());
  EXPECT_EQ(reg->status, 413) << reg->body;
  EXPECT_NE(reg->body.find("'big'"), std::string::npos) << reg->body;
}

json path_run(const std::string& path) {
  return {{"params", {{"dims", 2}}},
          {"dataset", {{"values", {{"path", path}, {"format", "raw"}}}}}};
}

TEST_F(Hardening, DatasetPathsOutsideTheDataRootsGet403) {
  const std::vector<double> rows = {1, 2, 3, 4, 5, 6};
  const std::string inside = data_ + "/rows.raw";
  std::ofstream(inside, std::ios::binary)
      .write(reinterpret_cast<const char*>(rows.data()), sizeof(double) * rows.size());
  const std::string secret = c_->dir() + "/secret.raw";
  std::ofstream(secret) << std::string(1001, 's');
  fs::create_symlink(secret, data_ + "/link.raw");

  auto ok = c_->post("/runtime/" + sum_ + "?wait=1", path_run(inside).dump());
  ASSERT_TRUE(ok.ok());
  json rec = json::parse(ok->body);
  ASSERT_EQ(rec["status"], "done") << ok->body;
  EXPECT_EQ(rec["result"]["aggregate"]["sums"], json({9.0, 12.0}));

  for (const std::string& p : {std::string("/etc/shadow"), std::string("/etc/passwd"), secret,
                               data_ + "/link.raw", data_ + "/../secret.raw"}) {
    auto r = c_->post("/runtime/" + sum_, path_run(p).dump());
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 403) << p << ": " << r->body;
    EXPECT_EQ(json::parse(r->body)["error"],
              "dataset field 'values': dataset path is outside the server's data roots "
              "(--data-root)")
        << r->body;
  }
  // Inside the roots, a file of the wrong size is refused without its size.
  std::ofstream(data_ + "/odd.raw") << std::string(1001, 's');
  auto odd = c_->post("/runtime/" + sum_, path_run(data_ + "/odd.raw").dump());
  ASSERT_TRUE(odd.ok());
  EXPECT_EQ(odd->status, 400) << odd->body;
  EXPECT_EQ(odd->body.find("1001"), std::string::npos) << odd->body;
}

// A run whose only worker dies mid-run fails, saying so, with the
// iterations it completed.
TEST(LostWorker, TheRecordSaysTheWorkerLeftAndHowFarTheRunGot) {
  LocalCluster c;
  ASSERT_TRUE(c.start(1, {"--cpu-threads", "1"}, {"--worker-wait", "2"}).ok());
  const std::string kmeans = register_program(c, LIZARD_SOURCE_DIR "/examples/kmeans");
  const std::string sum = register_program(c, LIZARD_SOURCE_DIR "/examples/sum");
  ASSERT_FALSE(kmeans.empty());
  const int64_t n = 1000000;
  std::mt19937 rng(3);
  std::normal_distribution<float> noise(0.f, 1.f);
  std::vector<float> pts(n * 2);
  for (auto& v : pts) v = noise(rng);
  const std::string path = c.dir() + "/points.npy";
  std::ofstream(path, std::ios::binary) << npy_bytes(DType::kFloat32, {n, 2}, pts.data());
  json body = {{"params", {{"k", 4}, {"dims", 2}, {"max_iterations", 100000}, {"threshold", -1}}},
               {"dataset", {{"points", {{"path", path}}}}},
               {"state", {{"centroids", {-1, -1, 1, -1, -1, 1, 1, 1}}}}};
  auto r = c.post("/runtime/" + kmeans, body.dump());
  ASSERT_TRUE(r.ok() && r->status == 202) << (r.ok() ? r->body : r.status().message());
  const std::string id = json::parse(r->body)["runtime_id"];
  for (int i = 0; i < 4000 && get_json(c, "/runtimes/" + id).value("iterations", 0) < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  c.kill_worker(0, SIGKILL);
  json rec = wait_until_finished(c, id, 60);
  ASSERT_EQ(rec["status"], "failed") << rec.dump(2);
  const std::string error = rec["error"];
  EXPECT_NE(error.find("lost worker"), std::string::npos) << error;
  EXPECT_NE(error.find("left during the run"), std::string::npos) << error;
  EXPECT_EQ(error.find("no worker has built"), std::string::npos) << error;
  EXPECT_GE(rec["iterations"].get<int64_t>(), 3) << rec.dump(2);

  ASSERT_TRUE(c.add_worker().ok());
  ASSERT_TRUE(c.wait_for_workers(1).ok());
  Hardening::expect_daemons_up(c, sum);
}

// Runs `lizard server` with `args` until it logs the address it listens on
// (after any warning about it); returns the log.
std::string server_start_log(const std::string& dir, std::vector<std::string> args) {
  const std::string log = dir + "/bind.log";
  std::vector<std::string> argv = {lizard_binary(), "server", "--state-dir", dir + "/bind-state"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargs;
  for (auto& a : argv) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  std::vector<char*> env;
  for (char** e = environ; *e; ++e)
    if (std::string(*e).rfind("LIZARD_TOKEN=", 0) != 0) env.push_back(*e);
  env.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  EXPECT_EQ(posix_spawn(&pid, cargs[0], &fa, nullptr, cargs.data(), env.data()), 0);
  posix_spawn_file_actions_destroy(&fa);
  std::string text;
  for (int i = 0; i < 200 && text.find("listening on http") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::ifstream in(log);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  kill(pid, SIGTERM);
  waitpid(pid, nullptr, 0);
  return text;
}

TEST(DefaultBind, WithoutATokenTheServerListensOnLoopbackOnly) {
  LocalCluster c;  // for its directory
  const std::string quiet = server_start_log(c.dir(), {"--port", "0"});
  EXPECT_NE(quiet.find("listening on http://127.0.0.1:"), std::string::npos) << quiet;
  EXPECT_EQ(quiet.find("without a token"), std::string::npos) << quiet;
  const std::string open = server_start_log(c.dir(), {"--port", "0", "--host", "0.0.0.0"});
  EXPECT_NE(open.find("listening on http://0.0.0.0:"), std::string::npos) << open;
  EXPECT_NE(open.find("without a token: anyone who can reach this port can run code"),
            std::string::npos)
      << open;
  const std::string tokened = server_start_log(c.dir(), {"--port", "0", "--token", "t0k"});
  EXPECT_NE(tokened.find("listening on http://0.0.0.0:"), std::string::npos) << tokened;
  EXPECT_EQ(tokened.find("without a token"), std::string::npos) << tokened;
}

}  // namespace
}  // namespace lizard
