// User text past the parsers' bounds, and input the validation must not let
// through, against a real server and worker: deeply nested expressions in a
// manifest, out-of-range params, duplicate keys, ambiguous dataset sources,
// program names with newlines, symlinks out of a program directory, bodies
// over the JSON limit, and tokens that do not admit workers.  Every answer is
// a 4xx naming the problem (or load_program's error), and the server keeps
// answering.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "local_cluster.h"

namespace lizard {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// examples/sum's config.yaml with `aggregate` lines added.
std::string sum_config(const std::string& aggregate = "") {
  std::string config = read_file(LIZARD_SOURCE_DIR "/examples/sum/config.yaml");
  config.insert(config.find("aggregate:\n") + 11, aggregate);
  return config;
}

// examples/sum with one more param, a float32, and `aggregate` lines added.
json sum_bundle(const std::string& aggregate = "") {
  std::string config = sum_config(aggregate);
  const std::string dims = "  dims: {type: int32}\n";
  config.replace(config.find(dims), dims.size(), dims + "  scale: {type: float32, default: 1}\n");
  return {{"config", config},
          {"sources", {{"kernel.cu", read_file(LIZARD_SOURCE_DIR "/examples/sum/kernel.cu")}}}};
}

// One server (worker token "w", read token "r") and one CPU worker.
class InputBounds : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    c_ = new LocalCluster();
    c_->set_token("w");
    Status st = c_->start(1, {"--token", "w"}, {"--token", "w", "--read-token", "r"});
    ASSERT_TRUE(st.ok()) << st.message();
    auto r = c_->post("/programs", sum_bundle().dump());
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ(r->status, 201) << r->body;
    sum_ = json::parse(r->body)["hash"];
  }
  static void TearDownTestSuite() {
    delete c_;
    c_ = nullptr;
  }
  // An upgrade to `path` is admitted only with the worker token.
  void check_worker_endpoint(const std::string& path);
  // The server is up and runs a program after each test.
  void TearDown() override {
    ASSERT_TRUE(c_->server_alive()) << "the server died";
    auto ruok = c_->get("/ruok");
    ASSERT_TRUE(ruok.ok()) << ruok.status().message();
    EXPECT_EQ(ruok->body, "imok");
    auto run = c_->post(
        "/runtime/" + sum_ + "?wait=1",
        json{{"params", {{"dims", 1}}}, {"dataset", {{"values", {{"values", {1, 2}}}}}}}.dump());
    ASSERT_TRUE(run.ok()) << run.status().message();
    EXPECT_EQ(json::parse(run->body)["result"]["aggregate"]["sums"][0], 3.0) << run->body;
  }

  // POST `body` to `path`: {status, error}.
  static std::pair<int, std::string> post(const std::string& path, const std::string& body) {
    auto r = c_->post(path, body);
    if (!r.ok()) return {-1, r.status().message()};
    json j = json::parse(r->body, nullptr, false);
    return {r->status, j.is_object() ? j.value("error", r->body) : r->body};
  }

  static LocalCluster* c_;
  static std::string sum_;
};
LocalCluster* InputBounds::c_ = nullptr;
std::string InputBounds::sum_;

TEST_F(InputBounds, DeeplyNestedShapeExpressionGets400) {
  const std::string deep = repeat("(", 20000) + "1" + repeat(")", 20000);
  const auto t0 = Clock::now();
  auto [status, error] =
      post("/programs",
           sum_bundle("  deep: {type: int64, shape: [\"" + deep + "\"], reduce: sum}\n").dump());
  EXPECT_EQ(status, 400) << error;
  EXPECT_EQ(error, "config.yaml: aggregate.deep.shape[0]: expression nested deeper than 64");
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
}

TEST_F(InputBounds, LoadProgramRefusesNestedExpressionsAndSymlinksOut) {
  const std::string dir = c_->dir() + "/deep";
  fs::create_directories(dir);
  fs::copy_file(LIZARD_SOURCE_DIR "/examples/sum/kernel.cu", dir + "/kernel.cu");
  std::ofstream(dir + "/config.yaml")
      << sum_config("  deep: {type: int64, shape: [\"" + repeat("(", 20000) + "1" +
                    repeat(")", 20000) + "\"], reduce: sum}\n");
  CommandResult deep = c_->load_program(dir);
  EXPECT_NE(deep.exit_code, 0) << deep.output;
  EXPECT_NE(deep.output.find("aggregate.deep.shape[0]: expression nested deeper than 64"),
            std::string::npos)
      << deep.output.substr(0, 500);

  // kernel.cu leading to a file outside the directory: refused, unread.
  const std::string secret = c_->dir() + "/secret.txt";
  std::ofstream(secret) << "not for the server's eyes";
  const std::string linked = c_->dir() + "/linked";
  fs::create_directories(linked);
  fs::copy_file(LIZARD_SOURCE_DIR "/examples/sum/config.yaml", linked + "/config.yaml");
  fs::create_symlink(secret, linked + "/kernel.cu");
  CommandResult out = c_->load_program(linked);
  EXPECT_NE(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("kernel.cu is a symlink that leads outside the program directory"),
            std::string::npos)
      << out.output;
  EXPECT_EQ(out.output.find("not for the server's eyes"), std::string::npos) << out.output;
}

TEST_F(InputBounds, RunRequestsThatWouldLoseInformationGet400) {
  const std::string run = "/runtime/" + sum_;
  const json values = {{"values", {1, 2}}};
  auto [s1, e1] = post(
      run,
      json{{"params", {{"dims", 1}, {"scale", 1e39}}}, {"dataset", {{"values", values}}}}.dump());
  EXPECT_EQ(s1, 400) << e1;
  EXPECT_EQ(e1, "param 'scale': 1e+39 is out of range for float32");

  auto [s2, e2] = post(run, R"({"params": {"dims": 1, "dims": 2},
                                "dataset": {"values": {"values": [1, 2]}}})");
  EXPECT_EQ(s2, 400) << e2;
  EXPECT_EQ(e2, "request body: duplicate key 'dims'");

  auto [s3, e3] =
      post(run, json{{"params", {{"dims", 1}}},
                     {"dataset", {{"values", {{"values", {1, 2}}, {"path", "/x.csv"}}}}}}
                    .dump());
  EXPECT_EQ(s3, 400) << e3;
  EXPECT_NE(e3.find("not both `values` and `path`"), std::string::npos) << e3;

  auto [s4, e4] = post(run, json{{"params", {{"dims", 1}}},
                                 {"dataset", {{"values", {{"values", {1, 2}}, {"fromat", "csv"}}}}}}
                                .dump());
  EXPECT_EQ(s4, 400) << e4;
  EXPECT_NE(e4.find("unknown key 'fromat'"), std::string::npos) << e4;
}

// A shape a run's params cannot size is refused naming the manifest's key:
// a division by zero at run time, an overflow at registration.
TEST_F(InputBounds, ShapesThatCannotBeSizedNameTheirKey) {
  auto [status, body] =
      post("/programs",
           sum_bundle("  buckets: {type: float64, shape: [\"dims / (dims - 1)\"], reduce: sum}\n")
               .dump());
  ASSERT_EQ(status, 201) << body;
  const std::string hash = json::parse(body)["hash"];
  auto [run_status, error] =
      post("/runtime/" + hash,
           json{{"params", {{"dims", 1}}}, {"dataset", {{"values", {{"values", {1, 2}}}}}}}.dump());
  EXPECT_EQ(run_status, 400) << error;
  EXPECT_NE(error.find("aggregate.buckets.shape[0]: division by zero in \"dims / (dims - 1)\""),
            std::string::npos)
      << error;
  auto [big_status, big_error] = post(
      "/programs",
      sum_bundle("  huge: {type: float64, shape: [\"4611686018427387904 * 4\"], reduce: sum}\n")
          .dump());
  EXPECT_EQ(big_status, 400) << big_error;
  EXPECT_NE(big_error.find("aggregate.huge"), std::string::npos) << big_error;
}

TEST_F(InputBounds, ProgramNamesWithNewlinesGet400) {
  json bundle = sum_bundle();
  std::string config = bundle["config"];
  config.replace(config.find("name: Column sums"), 17, "name: \"Column\\nsums\"");
  bundle["config"] = config;
  auto [status, error] = post("/programs", bundle.dump());
  EXPECT_EQ(status, 400) << error;
  EXPECT_NE(error.find("info.name: must be one line of printable text"), std::string::npos)
      << error;
}

TEST_F(InputBounds, JsonBodiesOverTheDefaultLimitGet413AtOnce) {
  // 64 MiB + 1: refused from the header, before the body is sent.
  const auto t0 = Clock::now();
  const std::string answer = raw_exchange(
      c_->port(), "POST /runtime/" + sum_ +
                      " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer w\r\n"
                      "Content-Type: application/json\r\nContent-Length: 67108865\r\n\r\n");
  EXPECT_EQ(answer.substr(0, answer.find("\r\n")), "HTTP/1.1 413 Payload Too Large") << answer;
  EXPECT_NE(answer.find("the limit is 67108864 bytes (--max-body)"), std::string::npos) << answer;
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
}

// The hub is /hub, and /workers for workers of earlier versions: the same rules.
TEST_F(InputBounds, WorkerEndpointNeedsTheWorkerToken) {
  for (const std::string path : {"/hub", "/workers"}) {
    SCOPED_TRACE(path);
    check_worker_endpoint(path);
  }
}

void InputBounds::check_worker_endpoint(const std::string& path) {
  const std::string upgrade =
      "GET " + path +
      " HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
      "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n";
  const std::string with_read =
      raw_exchange(c_->port(), upgrade + "Authorization: Bearer r\r\n\r\n");
  EXPECT_EQ(with_read.substr(0, with_read.find("\r\n")), "HTTP/1.1 403 Forbidden") << with_read;
  EXPECT_NE(with_read.find("needs the server's worker token (--token)"), std::string::npos)
      << with_read;
  const std::string without = raw_exchange(c_->port(), upgrade + "\r\n");
  EXPECT_EQ(without.substr(0, without.find("\r\n")), "HTTP/1.1 401 Unauthorized") << without;
  // Not a WebSocket upgrade, even with the read token: not a 404.
  const std::string plain =
      raw_exchange(c_->port(), "GET " + path +
                                   "?x=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer r\r\n"
                                   "Connection: close\r\n\r\n");
  EXPECT_EQ(plain.substr(0, plain.find("\r\n")), "HTTP/1.1 403 Forbidden") << plain;
  const std::string plain_worker =
      raw_exchange(c_->port(), "GET " + path +
                                   " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer w\r\n"
                                   "Connection: close\r\n\r\n");
  EXPECT_EQ(plain_worker.substr(0, plain_worker.find("\r\n")), "HTTP/1.1 426 Upgrade Required")
      << plain_worker;
}

// Large JSON bodies are held a bounded number at a time: with one slot, a
// request whose 20 MiB body is still arriving holds it, another large body
// is refused at its headers with 503 (its body never read), small requests
// are answered meanwhile, and once the first connection goes the slot is
// free again.
TEST(LargeBodies, OneMoreThanTheServerHoldsIsRefusedBeforeItsBodyIsRead) {
  LocalCluster c;
  ASSERT_TRUE(c.start(0, {}, {"--large-bodies", "1"}).ok());
  // A request to an unknown program with a body of `length` bytes, of
  // which `sent` are sent.
  auto request = [](size_t length, const std::string& sent) {
    return "POST /runtime/" + std::string(64, 'a') +
           " HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: "
           "application/json\r\nContent-Length: " +
           std::to_string(length) + "\r\n\r\n" + sent;
  };
  const int holder = connect_loopback(c.port());
  ASSERT_GE(holder, 0);
  const std::string part = request(20 << 20, "{\"dataset\": {\"x\": {\"values\": [1,");
  ASSERT_EQ(::send(holder, part.data(), part.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(part.size()));
  std::string refused;
  for (int i = 0; i < 50 && refused.find(" 503 ") == std::string::npos; ++i) {
    refused = raw_exchange(c.port(), request(10 << 20, ""));  // a refusal needs no body
    if (refused.find(" 503 ") == std::string::npos)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(refused.find("HTTP/1.1 503"), std::string::npos) << refused;
  EXPECT_NE(refused.find("request bodies over 8 MiB already (--large-bodies)"), std::string::npos)
      << refused;
  auto small = c.get("/clients");
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->status, 200);
  ::close(holder);
  // The slot is free again: a whole large body is read and answered (the
  // program is unknown).
  const std::string body = "{\"pad\": \"" + std::string(9 << 20, 'x') + "\"}";
  std::string after;
  for (int i = 0; i < 50; ++i) {
    after = raw_exchange(c.port(), request(body.size(), body));
    if (after.find(" 503 ") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(after.find("HTTP/1.1 4"), std::string::npos) << after.substr(0, 300);
  EXPECT_TRUE(c.server_alive());
}

}  // namespace
}  // namespace lizard
